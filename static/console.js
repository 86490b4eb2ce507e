// Behaviour shared by every page. No inline scripts anywhere: the CSP forbids them.
"use strict";
