#!/usr/bin/env node
import "../dist/mam-remote.js";
