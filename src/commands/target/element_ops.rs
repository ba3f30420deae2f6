//! The element ops of `element_actions.js` and the element's box in the main viewport:
//! [`Target::act`] calls an op (check state, focus, drop-downs, scrolling, drags),
//! [`Target::object`] answers the element an op names (such as a file input) as a remote object,
//! and [`element_box`], [`locator_box`] and [`shifted_box`] give the box `[x, y, width, height]`
//! an element image or a mouse command needs.
//!
//! What is not here: the commands built on these ops (`interact.rs`, `mouse.rs`, `read.rs`).

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::actionable::Read;
use super::find::find;
use super::locator::Locator;
use super::Target;
use crate::browser::tab::ElementObject;
use crate::browser::task::Task;
use crate::browser::Tab;
use crate::error::CommandError;
use crate::js;
use crate::protocol::ErrorCode;

impl Target {
    /// Calls op `op` of `element_actions.js` on this target (`args` an object).
    pub async fn act<T: DeserializeOwned>(&self, op: &str, args: Value) -> Result<T, CommandError> {
        self.call(js::ELEMENT_ACTIONS_JS, op, args).await
    }

    /// The element that op `op` of `element_actions.js` answers for this target (such as its
    /// file input), as a remote object.
    pub async fn object(&self, op: &str) -> Result<ElementObject, CommandError> {
        let args = json!({"op": op, "target": self.spec});
        self.tab
            .element_object(&self.frame, js::ELEMENT_ACTIONS_JS, args)
            .await
            .map_err(|e| self.explain(e))
    }
}

/// The box `[x, y, width, height]` of snapshot element `index` in the main viewport, after
/// scrolling it into view, with its tab (for an element image).
pub(crate) async fn element_box(
    task: &Task,
    index: u32,
) -> Result<(Arc<Tab>, [f64; 4]), CommandError> {
    locator_box(task, &Locator::Index(index), true).await
}

/// The box `[x, y, width, height]` of `locator`'s element in the main viewport (with `scroll`,
/// after scrolling it into view), with its tab; `ELEMENT_HIDDEN` without a box.
pub(crate) async fn locator_box(
    task: &Task,
    locator: &Locator,
    scroll: bool,
) -> Result<(Arc<Tab>, [f64; 4]), CommandError> {
    let read = if scroll { Read::default() } else { Read::QUIET };
    let (target, state) = find(task, locator, read).await?;
    let offset = target
        .tab
        .frame_offset(&target.frames, &target.frame)
        .await?;
    let rect = shifted_box(state.rect, offset).ok_or_else(|| {
        CommandError::new(
            ErrorCode::ElementHidden,
            format!("{} is not visible or has no layout", target.label),
        )
    })?;
    Ok((target.tab.clone(), rect))
}

/// A probe's `rect` (`[x, y, width, height]` in its frame) moved by the frame's `offset` into
/// the main viewport; `None` when it is missing or empty.
pub(crate) fn shifted_box(rect: [f64; 4], offset: (f64, f64)) -> Option<[f64; 4]> {
    let [x, y, w, h] = rect;
    (w > 0.0 && h > 0.0).then_some([x + offset.0, y + offset.1, w, h])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifted_boxes_need_a_size() {
        assert_eq!(
            shifted_box([1.0, 2.0, 3.0, 4.0], (10.0, 20.0)),
            Some([11.0, 22.0, 3.0, 4.0])
        );
        assert_eq!(shifted_box([1.0, 2.0, 0.0, 4.0], (0.0, 0.0)), None);
    }
}
