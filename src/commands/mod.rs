//! The command groups of `spec/COMMANDS.md`, one file each; this file only chains their specs.

pub mod dialogs;
pub mod extract;
pub mod human;
pub mod interact;
pub mod lifecycle;
pub mod meta;
pub mod modals;
pub mod navigation;
pub mod observe;
pub mod page_state;
pub mod target;
pub mod wait;

use crate::registry::CommandSpec;

/// Every group's specs, in catalogue order.
pub const GROUPS: &[&[CommandSpec]] = &[
    lifecycle::SPECS,
    navigation::SPECS,
    page_state::SPECS,
    interact::SPECS,
    wait::SPECS,
    extract::SPECS,
    dialogs::SPECS,
    modals::SPECS,
    human::SPECS,
    meta::SPECS,
];
