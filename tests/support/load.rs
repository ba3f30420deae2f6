//! The load run shared by the serve test and `cargo bench --bench serve`: `clients` callers
//! spread over a few tasks send `get_title` for a while, over HTTP (one thread per client,
//! a connection per request) or in-process (`Executor::execute`, one future per client).
//! Every request must be answered; the only failures allowed are typed busy receipts, after
//! which a client waits the receipt's `retryAfterMs` as a well-behaved one does. Latencies are
//! those of the answered `get_title`s (busy answers are counted, not timed).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use moonpilot::browser::task::TaskId;
use moonpilot::{ErrorCode, Executor};
use serde_json::{json, Value};

/// What one run saw.
#[derive(Default)]
pub struct Load {
    /// Requests sent (each one answered, or counted in `other`).
    pub sent: usize,
    /// `ok:true` answers.
    pub ok: usize,
    /// Typed busy answers (`TASK_BUSY`, or the engine's overload receipt).
    pub busy: usize,
    /// Anything else, described.
    pub other: Vec<String>,
    /// Wall time of the run, in seconds.
    pub secs: f64,
    /// Latency of every successful request, in milliseconds.
    pub latency_ms: Vec<f64>,
}

impl Load {
    fn merge(&mut self, o: Load) {
        self.sent += o.sent;
        self.ok += o.ok;
        self.busy += o.busy;
        self.other.extend(o.other);
        self.latency_ms.extend(o.latency_ms);
    }

    /// `name: N req in S s = R req/s, p50 X ms, p99 Y ms (ok, busy)`.
    pub fn summary(&self, name: &str) -> String {
        let mut l = self.latency_ms.clone();
        l.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        let at = |q: f64| {
            if l.is_empty() {
                0.0
            } else {
                l[((l.len() as f64 - 1.0) * q).round() as usize]
            }
        };
        format!(
            "{name:<28} {:>6} req in {:>5.1} s = {:>7.1} req/s   p50 {:>7.2} ms   p99 {:>7.2} ms   (ok {}, busy {}, other {})",
            self.sent,
            self.secs,
            self.sent as f64 / self.secs.max(1e-9),
            at(0.5),
            at(0.99),
            self.ok,
            self.busy,
            self.other.len()
        )
    }
}

/// Counts one answer that took `ms`; a busy one answers how long to wait before the next.
fn classify(
    load: &mut Load,
    ok: bool,
    data: &Value,
    ms: f64,
    what: impl FnOnce() -> String,
) -> Option<Duration> {
    load.sent += 1;
    if ok {
        load.ok += 1;
        load.latency_ms.push(ms);
    } else if data["errorCode"] == "TASK_BUSY" || data["overloaded"] == true {
        load.busy += 1;
        let wait = data["retryAfterMs"].as_u64().unwrap_or(100).min(1000);
        return Some(Duration::from_millis(wait));
    } else {
        load.other.push(what());
    }
    None
}

/// Pauses a plain client thread (never a runtime's: the lint guards those).
#[allow(clippy::disallowed_methods)]
pub fn pause(d: Duration) {
    std::thread::sleep(d);
}

/// `clients` HTTP clients, client `i` on task `tasks[i % len]`, for `duration`.
pub fn over_http(addr: SocketAddr, tasks: &[TaskId], clients: usize, duration: Duration) -> Load {
    let t0 = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|i| {
            let id = tasks[i % tasks.len()].0.to_string();
            std::thread::spawn(move || {
                let mut load = Load::default();
                let body = json!({"id": id, "method": "get_title", "params": {}});
                while t0.elapsed() < duration {
                    let t = Instant::now();
                    let reply = super::http::command(addr, &body);
                    let ms = t.elapsed().as_secs_f64() * 1000.0;
                    let v: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
                    let wait = classify(&mut load, v["ok"] == true, &v["data"], ms, || {
                        format!("{} {}", reply.status, String::from_utf8_lossy(&reply.body))
                    });
                    if let Some(wait) = wait {
                        pause(wait);
                    }
                }
                load
            })
        })
        .collect();
    let mut total = Load::default();
    for h in handles {
        match h.join() {
            Ok(l) => total.merge(l),
            Err(_) => total.other.push("a client thread panicked".into()),
        }
    }
    total.secs = t0.elapsed().as_secs_f64();
    total
}

/// The same load through `Executor::execute` directly, on a runtime of its own.
pub fn in_process(
    executor: &Executor,
    tasks: &[TaskId],
    clients: usize,
    duration: Duration,
) -> Load {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let t0 = Instant::now();
    let runs = (0..clients).map(|i| {
        let id = tasks[i % tasks.len()];
        let executor = executor.clone();
        async move {
            let mut load = Load::default();
            while t0.elapsed() < duration {
                let t = Instant::now();
                let r = executor.execute(Some(id), "get_title", json!({})).await;
                let ms = t.elapsed().as_secs_f64() * 1000.0;
                let mut data = r.data.clone();
                if r.code == Some(ErrorCode::TaskBusy) {
                    data["errorCode"] = json!("TASK_BUSY");
                }
                let wait = classify(&mut load, r.ok, &data, ms, || {
                    format!("{:?} {:?}", r.code, r.msg)
                });
                match wait {
                    Some(wait) => tokio::time::sleep(wait).await,
                    // A refusal answers without awaiting anything: let the other clients run.
                    None => tokio::task::yield_now().await,
                }
            }
            load
        }
    });
    let loads = rt.block_on(futures::future::join_all(runs));
    let mut total = Load::default();
    for l in loads {
        total.merge(l);
    }
    total.secs = t0.elapsed().as_secs_f64();
    total
}
