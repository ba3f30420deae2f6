//! The one integration test binary: real headless Chromium against local fixture pages.
//!
//! Each module covers one area; most tests run a Lua snippet through `support::harness::lua`,
//! with `page` bound to a fresh task and `A`/`B` the two fixture origins (different sites).

#![allow(clippy::unwrap_used)] // Test code: a panic is a failed test.

mod support;

mod batch;
mod capture;
mod cli;
mod dialogs;
mod doors_http;
mod errors;
mod evidence;
mod extract;
mod faults;
mod frames;
mod fuzz_doors;
mod hostile;
mod human;
mod identity;
mod interact;
mod interact_index;
mod lifecycle;
mod locate;
mod lua_api;
mod mcp;
mod modals;
mod mouse;
mod navigation;
mod network;
mod observation;
mod observation_beyond;
mod observation_listeners;
mod page_data;
mod page_state;
mod read_element;
mod recipes;
mod record;
mod remote;
mod repl;
mod report;
mod scripts;
mod security;
mod serve;
mod splash;
mod storage_settings;
mod tabs;
mod test_runner;
mod tidy;
mod wait;
mod watch;
