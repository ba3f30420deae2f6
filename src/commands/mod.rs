//! The command groups of `spec/COMMANDS.md`, one file each; this file only chains their specs
//! into the registry.

pub mod capture;
pub mod click_receipt;
pub mod console;
pub mod dialogs;
pub mod extract;
pub mod human;
pub mod interact;
pub mod jobs;
pub mod keys;
pub mod lifecycle;
pub mod locate;
pub mod meta;
pub mod modals;
pub mod mouse;
pub mod navigation;
pub mod network;
pub mod observe;
pub mod page_state;
pub mod read_element;
pub mod recipes;
pub mod settings;
pub mod staging;
pub mod storage;
pub mod tabs;
pub mod target;
pub mod wait;

use std::sync::OnceLock;

use crate::command::CommandSpec;
use crate::registry::Registry;

/// Every group's specs, in catalogue order.
pub const GROUPS: &[&[CommandSpec]] = &[
    lifecycle::SPECS,
    navigation::SPECS,
    page_state::SPECS,
    wait::SPECS,
    interact::SPECS,
    read_element::SPECS,
    locate::SPECS,
    tabs::SPECS,
    mouse::SPECS,
    capture::SPECS,
    storage::SPECS,
    settings::SPECS,
    dialogs::SPECS,
    modals::SPECS,
    console::SPECS,
    network::SPECS,
    extract::SPECS,
    meta::SPECS,
    recipes::SPECS,
    jobs::SPECS,
    human::SPECS,
];

/// Commands that are dispatched like any other but not listed (`list_methods`, the Lua `Task`
/// methods, the stubs): the batch `commands` (PROTOCOL.md §1, §10).
pub const UNLISTED: &[&[CommandSpec]] = &[jobs::UNLISTED];

/// The registry over every group.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::new(GROUPS).with_unlisted(UNLISTED))
}
