//! Screenshots and PDF: the viewport, the full page (cut at `MAX_FULL_PAGE_HEIGHT`) or a box,
//! each within a budget, with the highlight overlay hidden while the shot is taken and shown
//! again even when the caller stops waiting.
//!
//! A child of `tab.rs`. Where the files go and when evidence is taken is not here
//! (`evidence.rs`, `executor/capture.rs`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::frames::FrameRef;
use super::Tab;
use crate::encoding::decode_base64;
use crate::error::CommandError;
use crate::js;

/// How long [`Tab::screenshot`] and [`Tab::screenshot_box`] may take (state files and
/// human-input crops); the capture commands pass their own budget to [`Tab::shoot`].
const SCREENSHOT_BOUND: Duration = Duration::from_secs(3);

/// Shows the overlay again when dropped (in the background: the caller has its pixels), and
/// holds the tab's turn to shoot until it is shown, so the next shot's hide comes after it.
struct OverlayGuard {
    tab: Option<(Arc<Tab>, FrameRef)>,
    turn: Option<tokio::sync::OwnedMutexGuard<Option<LastShot>>>,
}

/// The last viewport shot of a tab and the page's stamp when it was taken (`overlay_toggle.js`:
/// what the pixels depend on, as far as the page can tell).
pub struct LastShot {
    stamp: String,
    png: Vec<u8>,
}

/// What a viewport shot does with the tab's last one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    /// Nothing (a box or a full page).
    Ignore,
    /// Takes a new shot and keeps it.
    Replace,
    /// Answers the last shot when the page's stamp has not changed since; else as `Replace`.
    Reuse,
}

/// The answer of `overlay_toggle.js`.
#[derive(serde::Deserialize)]
struct Toggled {
    stamp: Option<String>,
}

impl Drop for OverlayGuard {
    fn drop(&mut self) {
        let turn = self.turn.take();
        let Some((tab, main)) = self.tab.take() else {
            return;
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let show =
                    tab.call_probe::<Value>(&main, js::OVERLAY_TOGGLE_JS, json!({"show": true}));
                // Bounded: a page that hangs must not keep the tab's turn.
                let _ = tokio::time::timeout(SCREENSHOT_BOUND, show).await;
                drop(turn);
            });
        }
    }
}

/// A page's layout in CSS px ([`Tab::layout`]).
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// The visual viewport's scroll offset.
    pub scroll_x: f64,
    /// The visual viewport's scroll offset.
    pub scroll_y: f64,
    /// The visual viewport's size.
    pub width: f64,
    /// The visual viewport's size.
    pub height: f64,
    /// The content's size.
    pub content_width: f64,
    /// The content's size.
    pub content_height: f64,
}

/// What a screenshot covers.
#[derive(Clone, Copy, Debug)]
pub enum ShotArea {
    /// The viewport.
    Viewport,
    /// The whole scrollable page, at most [`MAX_FULL_PAGE_HEIGHT`] CSS px tall.
    FullPage,
    /// A box `[x, y, width, height]` in CSS pixels of the main viewport.
    Box([f64; 4]),
}

/// A screenshot: the PNG and, for a full page, the page's CSS height and whether the shot
/// was cut at [`MAX_FULL_PAGE_HEIGHT`].
pub struct Shot {
    /// The image.
    pub png: Vec<u8>,
    /// A full page's CSS height (taller than the shot when `clamped`).
    pub page_height: Option<f64>,
    /// The full page was cut at [`MAX_FULL_PAGE_HEIGHT`].
    pub clamped: bool,
}

/// The tallest full-page screenshot, in CSS px (taller pages are cut there).
pub const MAX_FULL_PAGE_HEIGHT: f64 = 16384.0;

impl Tab {
    /// A PNG screenshot of the viewport, with the highlight overlay hidden while it is taken,
    /// within [`SCREENSHOT_BOUND`].
    pub async fn screenshot(self: &Arc<Self>) -> Result<Vec<u8>, CommandError> {
        self.shoot(ShotArea::Viewport, SCREENSHOT_BOUND)
            .await
            .map(|s| s.png)
    }

    /// The screenshot of a state read ([`Tab::screenshot`]): the tab's last viewport shot when
    /// the page says nothing it draws has changed since (same document, mutation count, scroll,
    /// viewport, focus, selection and input, no animation running, nothing that draws by
    /// itself); a new one otherwise. A state read right after a click's capture then costs no
    /// second capture, and the next command does not wait for one (issue 22). Answers the PNG
    /// and whether it was reused.
    pub async fn state_screenshot(self: &Arc<Self>) -> Result<(Vec<u8>, bool), CommandError> {
        self.shoot_with(ShotArea::Viewport, SCREENSHOT_BOUND, Last::Reuse)
            .await
            .map(|(shot, reused)| (shot.png, reused))
    }

    /// A screenshot of `area` within `within`, the highlight overlay hidden while it is taken
    /// and restored afterwards, also when the caller stops waiting (the restore then runs on
    /// its own). A shot that takes longer fails with `captureTimeout` in its details.
    pub async fn shoot(
        self: &Arc<Self>,
        area: ShotArea,
        within: Duration,
    ) -> Result<Shot, CommandError> {
        self.shoot_with(area, within, Last::Replace)
            .await
            .map(|(shot, _)| shot)
    }

    /// [`Tab::shoot`], a viewport shot doing `viewport` with the tab's last one (a box or a full
    /// page ignores it); answers whether the shot is that last one, reused.
    async fn shoot_with(
        self: &Arc<Self>,
        area: ShotArea,
        within: Duration,
        viewport: Last,
    ) -> Result<(Shot, bool), CommandError> {
        let deadline = tokio::time::Instant::now() + within;
        let timed_out = || {
            CommandError::failed(format!(
                "the screenshot took longer than its budget of {} ms",
                within.as_millis()
            ))
            .with_details(json!({"captureTimeout": true}))
        };
        let work = async {
            let (params, page_height, last) = match area {
                ShotArea::Viewport => (
                    json!({"format": "png", "optimizeForSpeed": true}),
                    None,
                    viewport,
                ),
                ShotArea::FullPage => {
                    let metrics = self.call("Page.getLayoutMetrics", json!({})).await?;
                    let size = |k: &str| metrics["cssContentSize"][k].as_f64().unwrap_or(0.0);
                    let (width, height) = (size("width").max(1.0), size("height").max(1.0));
                    let shown = height.min(MAX_FULL_PAGE_HEIGHT);
                    let params = json!({"format": "png", "captureBeyondViewport": true,
                        "clip": {"x": 0, "y": 0, "width": width, "height": shown, "scale": 1}});
                    (params, Some(height), Last::Ignore)
                }
                ShotArea::Box(rect) => {
                    // `Page.captureScreenshot` clips in document coordinates: add the visual
                    // viewport's scroll offset.
                    let metrics = self.call("Page.getLayoutMetrics", json!({})).await?;
                    let scroll = |k: &str| metrics["cssVisualViewport"][k].as_f64().unwrap_or(0.0);
                    let params = json!({"format": "png", "clip": {
                        "x": rect[0] + scroll("pageX"), "y": rect[1] + scroll("pageY"),
                        "width": rect[2], "height": rect[3], "scale": 1,
                    }});
                    (params, None, Last::Ignore)
                }
            };
            let (png, reused) = self.capture_png(params, deadline, last).await?;
            let shot = Shot {
                png,
                page_height,
                clamped: page_height.is_some_and(|h| h > MAX_FULL_PAGE_HEIGHT),
            };
            Ok((shot, reused))
        };
        tokio::time::timeout_at(deadline, work)
            .await
            .unwrap_or_else(|_| Err(timed_out()))
    }

    /// The page as a PDF (`Page.printToPDF`, backgrounds printed).
    pub async fn print_pdf(&self) -> Result<Vec<u8>, CommandError> {
        let res = self
            .call("Page.printToPDF", json!({"printBackground": true}))
            .await?;
        res["data"]
            .as_str()
            .and_then(decode_base64)
            .ok_or_else(|| CommandError::failed("`Page.printToPDF` returned no data"))
    }

    /// `Page.captureScreenshot` with `params` by `deadline`, the highlight overlay hidden while
    /// it is taken (restored by a guard, also when this future is dropped); `last` says what
    /// it does with the tab's last viewport shot. Answers the PNG and whether it is that last
    /// shot, reused.
    async fn capture_png(
        self: &Arc<Self>,
        params: Value,
        deadline: tokio::time::Instant,
        last: Last,
    ) -> Result<(Vec<u8>, bool), CommandError> {
        let mut turn = tokio::time::timeout_at(deadline, self.shots.clone().lock_owned())
            .await
            .map_err(|_| {
                CommandError::failed(
                    "another screenshot of this tab held it past this one's budget",
                )
                .with_details(json!({"captureTimeout": true}))
            })?;
        let main = self.main_frame().await?;
        let kept = if last == Last::Ignore {
            None
        } else {
            turn.take()
        };
        // Armed before the overlay is hidden: dropped while the hide is in flight, it shows it.
        // The hide also marks the document, so that an overlay a state read draws meanwhile
        // starts hidden: the show is owed whenever the hide ran.
        let mut guard = OverlayGuard {
            tab: Some((self.clone(), main.clone())),
            turn: Some(turn),
        };
        // Whatever the hide answered (a lost answer may still have marked the document).
        let stamp = self
            .call_probe::<Toggled>(
                &main,
                js::OVERLAY_TOGGLE_JS,
                json!({"show": false, "stamp": last != Last::Ignore}),
            )
            .await
            .ok()
            .and_then(|t| t.stamp);
        if last == Last::Reuse {
            if let (Some(stamp), Some(shot)) = (&stamp, kept.as_ref()) {
                if shot.stamp == *stamp {
                    let png = shot.png.clone();
                    if let Some(turn) = guard.turn.as_mut() {
                        **turn = kept;
                    }
                    return Ok((png, true));
                }
            }
        }
        // From here the last shot is replaced, or forgotten when this one has no stamp.
        // A page that is being replaced produces no frame, and Chromium then holds the
        // capture until chromiumoxide's request timeout: bound it by the caller's deadline.
        let capture = self.call("Page.captureScreenshot", params);
        let shot = match tokio::time::timeout_at(deadline, capture).await {
            Ok(shot) => shot,
            Err(_) => Err(CommandError::failed(
                "no frame to capture before the screenshot's budget ran out (the page may be busy or being replaced)",
            )
            .with_details(json!({"captureTimeout": true}))),
        };
        let data = shot?
            .get("data")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| CommandError::failed("`Page.captureScreenshot` returned no data"))?;
        let png = decode_base64(&data)
            .ok_or_else(|| CommandError::failed("screenshot data is not base64"))?;
        if let (Some(stamp), Some(turn)) = (stamp.filter(|_| last != Last::Ignore), &mut guard.turn)
        {
            **turn = Some(LastShot {
                stamp,
                png: png.clone(),
            });
        }
        // The show runs in the background when the guard drops, the tab's turn with it.
        Ok((png, false))
    }

    /// The page's layout in CSS px: the visual viewport's scroll offset and size, and the
    /// content's size.
    pub async fn layout(&self) -> Result<Layout, CommandError> {
        let m = self.call("Page.getLayoutMetrics", json!({})).await?;
        let vv = |k: &str| m["cssVisualViewport"][k].as_f64().unwrap_or(0.0);
        let content = |k: &str| m["cssContentSize"][k].as_f64().unwrap_or(0.0);
        Ok(Layout {
            scroll_x: vv("pageX"),
            scroll_y: vv("pageY"),
            width: vv("clientWidth"),
            height: vv("clientHeight"),
            content_width: content("width"),
            content_height: content("height"),
        })
    }

    /// An image of `clip` (`[x, y, width, height]` in document CSS px, beyond the viewport
    /// too) at `scale`, as PNG or as JPEG of `quality` (Splash's captures), the highlight
    /// overlay hidden, within [`SCREENSHOT_BOUND`]. The image's bytes.
    pub async fn capture_clip(
        self: &Arc<Self>,
        clip: [f64; 4],
        scale: f64,
        jpeg_quality: Option<u8>,
    ) -> Result<Vec<u8>, CommandError> {
        let [x, y, width, height] = clip;
        let mut params = json!({"format": "png", "captureBeyondViewport": true,
            "clip": {"x": x, "y": y, "width": width, "height": height, "scale": scale}});
        if let Some(q) = jpeg_quality {
            params["format"] = json!("jpeg");
            params["quality"] = json!(q.min(100));
        }
        let deadline = tokio::time::Instant::now() + SCREENSHOT_BOUND;
        let work = self.capture_png(params, deadline, Last::Ignore);
        match tokio::time::timeout_at(deadline, work).await {
            Ok(done) => done.map(|(bytes, _)| bytes),
            Err(_) => Err(
                CommandError::failed("the capture took longer than its budget")
                    .with_details(json!({"captureTimeout": true})),
            ),
        }
    }

    /// A PNG of the box `[x, y, width, height]` (CSS pixels of the main viewport), the
    /// highlight overlay hidden, within [`SCREENSHOT_BOUND`].
    pub async fn screenshot_box(self: &Arc<Self>, rect: [f64; 4]) -> Result<Vec<u8>, CommandError> {
        self.shoot(ShotArea::Box(rect), SCREENSHOT_BOUND)
            .await
            .map(|s| s.png)
    }
}
