#!/usr/bin/env node
import "../dist/mam-pick.js";
