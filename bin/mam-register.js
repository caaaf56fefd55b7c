#!/usr/bin/env node
import "../dist/mam-register.js";
