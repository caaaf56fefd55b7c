#!/usr/bin/env node
import "../dist/mam-subscribe.js";
