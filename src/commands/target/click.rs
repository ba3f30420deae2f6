//! The click techniques of COMMANDS.md "Click modes": [`ClickMode`], [`Target::click`] and
//! [`Target::press`] (a single or a double click, [`Press`]) with auto mode's fallbacks and its
//! share of the budget, the real mouse (`mouse_click`, `mouse_double_click`, `session_point`), the
//! JS dispatch, hovering, and [`Clicked`], what `click_receipt.rs` turns into the receipt.
//!
//! What is not here: the actionability checks a click waits for (`actionable.rs`) and the
//! receipt (`click_receipt.rs`).

use serde::Deserialize;
use serde_json::json;

use super::actionable::{disabled_details, Actionable, ElementState, Read};
use super::Target;
use crate::browser::task::Task;
use crate::commands::observe::Observation;
use crate::error::CommandError;
use crate::protocol::ErrorCode;

/// Click technique (COMMANDS.md "Click modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClickMode {
    /// Actionability checks and a real click; then a real mouse click for an element that
    /// kept moving, or JS dispatch for one that stayed hidden. Never on a disabled element
    /// nor through another one.
    Auto,
    /// Actionability checks and a real click, no fallback.
    Native,
    /// A real click at once, without waiting; still only where the element receives it.
    Mouse,
    /// Events dispatched to the element itself, whatever covers it (the caller's explicit
    /// bypass); refused only for a natively disabled element, which gets no click events.
    Js,
}

impl ClickMode {
    /// The mode named by a `mode` param (aliases of COMMANDS.md; anything else is auto).
    pub fn parse(raw: Option<&str>) -> ClickMode {
        match raw.map(str::to_ascii_lowercase).as_deref() {
            Some("native" | "playwright") => ClickMode::Native,
            Some("mouse" | "real" | "coordinate" | "coords") => ClickMode::Mouse,
            Some("js" | "dispatch" | "force" | "event") => ClickMode::Js,
            _ => ClickMode::Auto,
        }
    }

    /// What the first read of a click in this mode needs: a hit test and the page mark always
    /// (it is the last read before the click when the element is ready); in the modes that
    /// wait for actionability, the box in the next animation frame too, so an element that
    /// holds still is clicked after one read.
    pub fn first_read(self) -> Read {
        let waits = matches!(self, ClickMode::Auto | ClickMode::Native);
        Read {
            hit_test: true,
            observe: true,
            keep_scroll: false,
            settle: waits,
        }
    }
}

/// How a click went (the input of `click_receipt::click_receipt`).
pub struct Clicked {
    /// The read the click was decided on: its point, hit and cover.
    pub state: ElementState,
    /// The page just before the click.
    pub before: Observation,
    /// The technique used: `native`, `mouse` or `js`.
    pub mode: &'static str,
    /// Why auto mode did not click natively, when it did not.
    pub fallback: Option<String>,
}

/// One click or two (a double click: two clicks and a `dblclick`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Press {
    /// One click.
    Single,
    /// Two clicks, the second with click count 2, and a `dblclick`.
    Double,
}

/// The answer of the `js_click` op.
#[derive(Debug, Clone, Deserialize)]
struct JsClicked {
    #[allow(dead_code)] // Read to check the reply's shape; the receipt names the hit instead.
    tag: String,
}

impl Target {
    /// Events dispatched to the element itself (JS-PROBES.md §9 JS click).
    pub async fn js_click(&self) -> Result<(), CommandError> {
        self.probe::<JsClicked>("js_click", json!({}))
            .await
            .map(drop)
    }

    /// Clicks in `mode`, starting from `first` (a read made with `mode.first_read()`), and
    /// takes the "before" observation from the last read before the click. A click that
    /// would not reach the element is never made: `ELEMENT_DISABLED`, `ELEMENT_OBSCURED`
    /// (with `coveredBy`), `ELEMENT_HIDDEN`; only mode js dispatches through a cover.
    pub async fn click(
        &self,
        task: &Task,
        first: ElementState,
        mode: ClickMode,
        timeout_ms: u64,
    ) -> Result<Clicked, CommandError> {
        self.press(task, first, mode, timeout_ms, Press::Single)
            .await
    }

    /// [`Target::click`] with a single or a double click.
    pub async fn press(
        &self,
        task: &Task,
        first: ElementState,
        mode: ClickMode,
        timeout_ms: u64,
        press: Press,
    ) -> Result<Clicked, CommandError> {
        let observed = Read {
            hit_test: true,
            observe: true,
            keep_scroll: false,
            settle: false,
        };
        match mode {
            ClickMode::Js => self.dispatch(task, first, None, press).await,
            ClickMode::Mouse => {
                if first.disabled {
                    return Err(self.disabled(&first));
                }
                let state = self.with_mark(first).await?;
                let point = self.click_point(&state)?;
                self.real_click(task, state, point, "mouse", None, press)
                    .await
            }
            ClickMode::Auto | ClickMode::Native => {
                let wait_ms = if mode == ClickMode::Auto {
                    native_share(timeout_ms)
                } else {
                    timeout_ms
                };
                let t0 = std::time::Instant::now();
                let ready = self.wait_actionable(first, wait_ms, observed).await?;
                tracing::debug!(target: "moonpilot::click", "actionable after {:?}", t0.elapsed());
                match ready {
                    Actionable::Ready(state) => {
                        let state = self.with_mark(state).await?;
                        match self.click_point(&state) {
                            Ok(point) => {
                                self.real_click(task, state, point, "native", None, press)
                                    .await
                            }
                            Err(e)
                                if mode == ClickMode::Auto
                                    && e.code == ErrorCode::ElementHidden =>
                            {
                                self.dispatch(task, state, Some(e.msg), press).await
                            }
                            Err(e) => Err(e),
                        }
                    }
                    Actionable::NotReady(_, e)
                        if mode == ClickMode::Native || e.code == ErrorCode::ElementDisabled =>
                    {
                        Err(e)
                    }
                    Actionable::NotReady(state, e) if e.code == ErrorCode::ElementHidden => {
                        self.dispatch(task, state, Some(e.msg), press).await
                    }
                    Actionable::NotReady(state, e) => {
                        // It kept moving: a real click where it is now, if it receives one.
                        let state = self.with_mark(state).await?;
                        let point = self.click_point(&state)?;
                        self.real_click(task, state, point, "mouse", Some(e.msg), press)
                            .await
                    }
                }
            }
        }
    }

    async fn real_click(
        &self,
        task: &Task,
        state: ElementState,
        point: [f64; 2],
        mode: &'static str,
        fallback: Option<String>,
        press: Press,
    ) -> Result<Clicked, CommandError> {
        let t0 = std::time::Instant::now();
        let before = Box::pin(self.before(task, &state)).await;
        tracing::debug!(target: "moonpilot::click", "before-observation {:?}", t0.elapsed());
        match press {
            Press::Single => self.mouse_click(point).await?,
            Press::Double => self.mouse_double_click(point).await?,
        }
        tracing::debug!(target: "moonpilot::click", "mouse events sent {:?}", t0.elapsed());
        Ok(Clicked {
            state,
            before,
            mode,
            fallback,
        })
    }

    /// The JS click of mode js and of auto's fallback for hidden elements.
    async fn dispatch(
        &self,
        task: &Task,
        state: ElementState,
        fallback: Option<String>,
        press: Press,
    ) -> Result<Clicked, CommandError> {
        if state.disabled {
            return Err(self.disabled(&state));
        }
        let state = self.with_mark(state).await?;
        let before = self.before(task, &state).await;
        match press {
            Press::Single => self.js_click().await?,
            Press::Double => self.js_double_click().await?,
        }
        Ok(Clicked {
            state,
            before,
            mode: "js",
            fallback,
        })
    }

    fn disabled(&self, state: &ElementState) -> CommandError {
        CommandError::new(
            ErrorCode::ElementDisabled,
            format!("{} is disabled; a click would not reach it", self.label),
        )
        .with_details(disabled_details(state))
    }

    /// `state` with a page mark, reading the element again when it has none.
    async fn with_mark(&self, state: ElementState) -> Result<ElementState, CommandError> {
        if state.page.is_some() {
            return Ok(state);
        }
        self.inspect(Read {
            hit_test: true,
            observe: true,
            keep_scroll: false,
            settle: false,
        })
        .await
    }

    /// The "before" observation from the page mark of a read (see [`Target::with_mark`]), with
    /// the click watch armed in the element's frame.
    async fn before(&self, task: &Task, state: &ElementState) -> Observation {
        let mark = state
            .page
            .clone()
            .ok_or_else(|| CommandError::failed("the read before the action took no page mark"));
        let t0 = std::time::Instant::now();
        let before = self.observation(task, mark).await;
        let before = before.armed(&self.tab, &self.frame).await;
        tracing::debug!(target: "moonpilot::click", "armed in {:?}", t0.elapsed());
        before
    }

    /// A trusted left click at a point of the element's frame viewport, sent to the session of
    /// that frame (an out-of-process iframe gets it in its own coordinates, so it is not lost
    /// when the tab is in the background).
    pub async fn mouse_click(&self, point: [f64; 2]) -> Result<(), CommandError> {
        let (ox, oy) = self
            .tab
            .offset_in_session(&self.frames, &self.frame)
            .await?;
        self.tab
            .mouse_click_in(&self.frame, point[0] + ox, point[1] + oy)
            .await
    }

    /// `point` (in the element's frame viewport) in the viewport of the session its input
    /// events go to (see [`Target::mouse_click`]).
    pub async fn session_point(&self, point: [f64; 2]) -> Result<[f64; 2], CommandError> {
        let (ox, oy) = self
            .tab
            .offset_in_session(&self.frames, &self.frame)
            .await?;
        Ok([point[0] + ox, point[1] + oy])
    }

    /// A trusted double click at a point of the element's frame viewport.
    pub async fn mouse_double_click(&self, point: [f64; 2]) -> Result<(), CommandError> {
        let [x, y] = self.session_point(point).await?;
        self.tab.mouse_double_click_in(&self.frame, x, y).await
    }

    /// JS click twice and a `dblclick`, dispatched to the element itself.
    async fn js_double_click(&self) -> Result<(), CommandError> {
        self.act::<JsClicked>("js_dblclick", json!({}))
            .await
            .map(drop)
    }

    /// A trusted mouse move onto the element (hover), at the point of `state` (a read with a
    /// hit test): `ELEMENT_HIDDEN` or `ELEMENT_OBSCURED` when no point of it receives events.
    /// Answers the point (in the element's frame viewport).
    pub async fn hover(&self, state: &ElementState) -> Result<[f64; 2], CommandError> {
        let point = self.click_point(state)?;
        let (ox, oy) = self
            .tab
            .offset_in_session(&self.frames, &self.frame)
            .await?;
        self.tab
            .mouse_move_in(&self.frame, point[0] + ox, point[1] + oy)
            .await?;
        Ok(point)
    }

    /// Moves the real mouse onto the element once it is actionable ([`Target::hover`]);
    /// answers the read (its `hit` is what the pointer is over).
    pub async fn hover_when_ready(
        &self,
        first: ElementState,
        timeout_ms: u64,
    ) -> Result<ElementState, CommandError> {
        let (state, _) = self.ready_point(first, timeout_ms).await?;
        self.hover(&state).await?;
        Ok(state)
    }
}

/// The part of an auto click's `timeout_ms` that native mode may wait for actionability: a
/// third (at most 1 s) is kept for the fallbacks, so an element that never becomes actionable
/// is still clicked with the mouse or JS within the caller's budget.
fn native_share(timeout_ms: u64) -> u64 {
    timeout_ms - (timeout_ms / 3).min(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_aliases() {
        assert_eq!(ClickMode::parse(Some("dispatch")), ClickMode::Js);
        assert_eq!(ClickMode::parse(Some("COORDS")), ClickMode::Mouse);
        assert_eq!(ClickMode::parse(Some("playwright")), ClickMode::Native);
        assert_eq!(ClickMode::parse(Some("whatever")), ClickMode::Auto);
        assert_eq!(ClickMode::parse(None), ClickMode::Auto);
    }

    #[test]
    fn the_first_read_observes_and_settles_only_in_modes_that_wait() {
        assert!(ClickMode::Js.first_read().observe);
        assert!(!ClickMode::Mouse.first_read().settle);
        assert!(ClickMode::Auto.first_read().observe && ClickMode::Auto.first_read().settle);
        assert!(ClickMode::Native.first_read().hit_test);
    }

    #[test]
    fn auto_mode_keeps_a_share_of_its_budget_for_the_fallbacks() {
        assert_eq!(native_share(900), 600);
        assert_eq!(native_share(5000), 4000);
        assert_eq!(native_share(0), 0);
    }
}
