//! A synthetic recorded run for the report's bound (`tests/report.rs`, `benches/report.rs`):
//! `n` commands over 4 tasks, a screenshot for each of the newest 200 that succeeded (what
//! retention keeps by default), a click point on the clicks among them, and a state read's
//! observation text every 200 commands.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// A page-like PNG of `w` x `h`: a coloured header, paragraphs of text-grey "letters" of
/// varying line lengths on white, and a few buttons.
pub fn page_png(w: u32, h: u32) -> Vec<u8> {
    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, w, h);
    encoder.set_color(png::ColorType::Rgb);
    let mut writer = encoder.write_header().unwrap();
    let pixels: Vec<u8> = (0..w * h)
        .flat_map(|i| {
            let (x, y) = (i % w, i / w);
            if y < 56 {
                return [33, 80, 160];
            }
            let line = y / 24;
            let in_paragraph = line % 8 < 6 && y % 24 < 12;
            let line_end = 120 + (line * 137 % 9) * 70;
            let letter = x % 9 < 6 && (x / 9) % 7 != 0;
            if in_paragraph && x > 40 && x < line_end.min(w * 2 / 3) && letter {
                [50, 50, 50]
            } else if line % 8 == 7 && (1000..1160).contains(&x) && y % 24 < 20 {
                [0, 120, 90]
            } else {
                [255, 255, 255]
            }
        })
        .collect();
    writer.write_image_data(&pixels).unwrap();
    writer.finish().unwrap();
    png
}

/// Writes the run under the state directory `state` (its trace, evidence and record) and
/// answers its directory. Every 97th command fails (31 of 3,000).
pub fn synthetic_run(state: &Path, n: usize, (w, h): (u32, u32)) -> PathBuf {
    let (data, trace) = (state.join("data"), state.join("logs/trace"));
    let id = "20260101-000000.000-1-1";
    let run_dir = state.join("runs").join(id);
    std::fs::create_dir_all(&run_dir).unwrap();
    let t0 = 1_767_225_600_000u64;
    let day = trace.join(moonpilot::trace::utc_date(t0));
    std::fs::create_dir_all(&day).unwrap();
    let methods = [
        "navigate",
        "click_element_by_index",
        "input_text",
        "get_browser_state",
    ];
    let png = page_png(w, h);
    let mut lines = String::new();
    for i in 0..n {
        let task = format!("{}", 7_000_000 + i % 4);
        let method = methods[i % methods.len()];
        let ok = i % 97 != 0;
        let dir = data.join(&task);
        std::fs::create_dir_all(&dir).unwrap();
        let mut result = json!({"url": format!("http://127.0.0.1:8000/page/{i}")});
        if i >= n.saturating_sub(200) && ok {
            let path = dir.join(format!("{i}.png"));
            std::fs::write(&path, &png).unwrap();
            result["seq"] = json!(i);
            result["screenshot"] = json!(format!("/data/{task}/{i}.png"));
            result["screenshot_path"] = json!(path.display().to_string());
            if method == "click_element_by_index" {
                result["clickPoint"] = json!([f64::from(w) / 2.0, 200.0]);
            }
        }
        if method == "get_browser_state" && i % 200 == 3 {
            let path = dir.join(format!("{i}.txt"));
            std::fs::write(&path, "\t[0]<button >Go/>\n".repeat(200)).unwrap();
            result["state_file"] = json!(path.display().to_string());
        }
        let failure = |v: Value| if ok { Value::Null } else { v };
        let line = json!({
            "seq": i + 1, "ts": t0 + 40 * i as u64, "durationMs": 5.0 + (i % 30) as f64,
            "taskId": task, "method": method, "ok": ok,
            "code": failure(json!("ELEMENT_NOT_FOUND")),
            "msg": failure(json!(format!("{method}: no element {i}"))),
            "started": true, "retryable": false, "request": {"index": i, "text": "x"},
            "result": result, "run": id,
        });
        lines.push_str(&line.to_string());
        lines.push('\n');
    }
    std::fs::write(day.join("calls.jsonl"), lines).unwrap();
    let record = json!({
        "id": id, "script": "/tmp/synthetic.lua", "startedMs": t0,
        "endedMs": t0 + 40 * n as u64 + 1000, "status": "ok", "exitCode": 0, "error": null,
        "traceDir": trace, "dataDir": data, "pid": 1,
    });
    std::fs::write(run_dir.join("run.json"), record.to_string()).unwrap();
    run_dir
}
