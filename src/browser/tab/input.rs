//! Trusted input at points: the tab's mouse (where it is, which buttons it holds, as the mouse
//! commands left it), clicks and moves in the main viewport or a frame's session, and typing at
//! the focused element.
//!
//! A child of `tab.rs`. The element-bound interactions (double click, hover, drag, keys, file
//! inputs) are `actions.rs`.

use serde_json::{json, Value};

use super::frames::FrameRef;
use super::Tab;
use crate::error::CommandError;

/// The `Input.dispatchMouseEvent` params of a left click at (`x`, `y`): move, press, release.
fn click_events(x: f64, y: f64) -> [Value; 3] {
    let press = |kind: &str, buttons: u8| json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": 1});
    [
        json!({"type": "mouseMoved", "x": x, "y": y}),
        press("mousePressed", 1),
        press("mouseReleased", 0),
    ]
}

/// A mouse button of `Input.dispatchMouseEvent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseButton {
    /// The primary button.
    Left,
    /// The secondary button.
    Right,
    /// The wheel button.
    Middle,
}

impl MouseButton {
    /// The button a `button` param names: `right`, `middle`, anything else is left
    /// (COMMANDS.md, mouse group).
    pub fn parse(raw: Option<&str>) -> MouseButton {
        match raw.map(str::to_ascii_lowercase).as_deref() {
            Some("right") => MouseButton::Right,
            Some("middle") => MouseButton::Middle,
            _ => MouseButton::Left,
        }
    }

    /// The CDP spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            MouseButton::Left => "left",
            MouseButton::Right => "right",
            MouseButton::Middle => "middle",
        }
    }

    /// Its bit in the `buttons` mask (as in DOM `MouseEvent.buttons`).
    fn bit(self) -> u8 {
        match self {
            MouseButton::Left => 1,
            MouseButton::Right => 2,
            MouseButton::Middle => 4,
        }
    }
}

/// Where the tab's mouse is and which buttons it holds, as the mouse commands left them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pointer {
    /// Viewport x of the main frame, CSS px.
    pub x: f64,
    /// Viewport y of the main frame, CSS px.
    pub y: f64,
    /// The pressed buttons, as a DOM `buttons` mask (1 left, 2 right, 4 middle).
    pub buttons: u8,
}

impl Pointer {
    /// The button a move reports while buttons are held (the first of left, right, middle).
    fn held(&self) -> &'static str {
        [MouseButton::Left, MouseButton::Right, MouseButton::Middle]
            .into_iter()
            .find(|b| self.buttons & b.bit() != 0)
            .map_or("none", MouseButton::as_str)
    }
}

impl Tab {
    /// A trusted left click at viewport point (`x`, `y`) of the main frame.
    pub async fn mouse_click(&self, x: f64, y: f64) -> Result<(), CommandError> {
        let main = self.main_frame_local();
        self.call_all_in(
            &main,
            "Input.dispatchMouseEvent",
            click_events(x, y).to_vec(),
        )
        .await?;
        self.set_pointer(Pointer {
            x,
            y,
            ..self.pointer()
        });
        Ok(())
    }

    /// Where the mouse is and which buttons it holds (the mouse commands' view: a click of
    /// another command moves it too).
    pub fn pointer(&self) -> Pointer {
        match self.pointer.lock() {
            Ok(p) => *p,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }

    fn set_pointer(&self, pointer: Pointer) {
        match self.pointer.lock() {
            Ok(mut p) => *p = pointer,
            Err(poisoned) => *poisoned.into_inner() = pointer,
        }
    }

    /// Moves the mouse to viewport point (`x`, `y`) of the main frame (`Input.dispatchMouseEvent`
    /// `mouseMoved`), carrying the buttons held since [`Tab::mouse_down`]: a move between down
    /// and up is a drag.
    pub async fn mouse_move(&self, x: f64, y: f64) -> Result<(), CommandError> {
        let p = self.pointer();
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": x, "y": y, "button": p.held(), "buttons": p.buttons}),
        )
        .await?;
        self.set_pointer(Pointer { x, y, ..p });
        Ok(())
    }

    /// Presses (`down`) or releases `button` where the mouse is; answers the pointer after.
    pub async fn mouse_button(
        &self,
        button: MouseButton,
        down: bool,
        click_count: u32,
    ) -> Result<Pointer, CommandError> {
        let p = self.pointer();
        let buttons = if down {
            p.buttons | button.bit()
        } else {
            p.buttons & !button.bit()
        };
        self.call(
            "Input.dispatchMouseEvent",
            json!({
                "type": if down { "mousePressed" } else { "mouseReleased" },
                "x": p.x, "y": p.y, "button": button.as_str(), "buttons": buttons,
                "clickCount": click_count.max(1),
            }),
        )
        .await?;
        let after = Pointer { buttons, ..p };
        self.set_pointer(after);
        Ok(after)
    }

    /// Turns the wheel by (`dx`, `dy`) CSS px where the mouse is (`mouseWheel`; positive `dy`
    /// scrolls down).
    pub async fn mouse_wheel(&self, dx: f64, dy: f64) -> Result<Pointer, CommandError> {
        let p = self.pointer();
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseWheel", "x": p.x, "y": p.y, "deltaX": dx, "deltaY": dy, "buttons": p.buttons}),
        )
        .await?;
        Ok(p)
    }

    /// `count` trusted clicks of `button` at viewport point (`x`, `y`) of the main frame: a
    /// move there, then press and release with `clickCount` 1..=count (a double click is two
    /// pairs, as a real mouse makes it).
    pub async fn mouse_click_with(
        &self,
        x: f64,
        y: f64,
        button: MouseButton,
        count: u32,
    ) -> Result<(), CommandError> {
        self.mouse_move(x, y).await?;
        for n in 1..=count.max(1) {
            self.mouse_button(button, true, n).await?;
            self.mouse_button(button, false, n).await?;
        }
        Ok(())
    }

    /// A trusted left click at point (`x`, `y`) of the viewport of `frame`'s session: the main
    /// viewport for the page session, the out-of-process iframe's own viewport for a remote one.
    ///
    /// Sent on the frame's own session, the events go straight to that frame's renderer. Sent on
    /// the page session, Chromium routes them into an out-of-process iframe by hit-testing the
    /// compositor's surfaces, which a background tab does not produce: such clicks are lost.
    /// In a background tab the `mouseMoved` answer also waits about 5 s (mouse moves wait for
    /// an animation frame), here as in [`Tab::mouse_click`]; press and release answer at once.
    pub async fn mouse_click_in(
        &self,
        frame: &FrameRef,
        x: f64,
        y: f64,
    ) -> Result<(), CommandError> {
        self.call_all_in(
            frame,
            "Input.dispatchMouseEvent",
            click_events(x, y).to_vec(),
        )
        .await
    }

    /// A trusted mouse move to point (`x`, `y`) of the viewport of `frame`'s session (hover),
    /// sent like [`Tab::mouse_click_in`].
    pub async fn mouse_move_in(
        &self,
        frame: &FrameRef,
        x: f64,
        y: f64,
    ) -> Result<(), CommandError> {
        self.call_in(
            frame,
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": x, "y": y}),
        )
        .await
        .map(drop)
    }

    /// A trusted Delete key press at the focused element (clears a selection).
    pub async fn press_delete(&self) -> Result<(), CommandError> {
        for kind in ["keyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": "Delete", "code": "Delete", "windowsVirtualKeyCode": 46}),
            )
            .await?;
        }
        Ok(())
    }

    /// Inserts `text` at the focused element as one input (works for any script, CJK included).
    pub async fn insert_text(&self, text: &str) -> Result<(), CommandError> {
        self.call("Input.insertText", json!({"text": text}))
            .await
            .map(drop)
    }

    /// Types `text` key by key: ASCII characters as key events, others through `insertText`.
    pub async fn type_keys(&self, text: &str) -> Result<(), CommandError> {
        for ch in text.chars() {
            match ch {
                '\n' | '\r' => {
                    for kind in ["keyDown", "keyUp"] {
                        let mut ev = json!({"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13});
                        if kind == "keyDown" {
                            ev["text"] = json!("\r");
                        }
                        self.call("Input.dispatchKeyEvent", ev).await?;
                    }
                }
                c if c.is_ascii() && !c.is_ascii_control() => {
                    let s = c.to_string();
                    self.call(
                        "Input.dispatchKeyEvent",
                        json!({"type": "keyDown", "key": s, "text": s, "unmodifiedText": s}),
                    )
                    .await?;
                    self.call("Input.dispatchKeyEvent", json!({"type": "keyUp", "key": s}))
                        .await?;
                }
                c => self.insert_text(&c.to_string()).await?,
            }
        }
        Ok(())
    }
}
