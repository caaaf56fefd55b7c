#!/usr/bin/env node
import "../dist/mam.js";
