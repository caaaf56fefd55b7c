#!/usr/bin/env node
import "../dist/mam-close.js";
