#!/usr/bin/env node
import "../dist/mam-publish.js";
