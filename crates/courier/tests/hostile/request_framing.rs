//! Issue 14, defect 2 (filled in below).
