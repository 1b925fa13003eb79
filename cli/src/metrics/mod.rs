//! `serve --metrics ADDR`: a Prometheus endpoint on `/metrics`.
//!
//! Each scrape asks the loop for a status snapshot through the same bounded control channel
//! the status socket uses (the loop answers between two turns; the lock is held only while
//! it copies its counters), and renders it (`render.rs`). Nothing is sampled in between, so
//! an idle endpoint costs the engine nothing.
//!
//! The HTTP server is `tiny_http`, synchronous like the rest of `serve` (threads and an
//! io_uring loop, no async runtime). One thread answers requests one at a time: a scrape is
//! cheap, Prometheus scrapes every few seconds, and the endpoint listens on loopback unless
//! told otherwise. tiny_http's own accept queue is the only other buffer; the response to a
//! request is built before the next one is read, so at most one snapshot exists at a time.

mod encode;
mod members;
mod pool;
mod render;
mod volumes;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use prometheus_client::registry::Registry;

pub use render::{PoolFacts, SnapshotMetrics};

use crate::status_doc::StatusDoc;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROMETHEUS_TEXT: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The text of one scrape: OpenMetrics when asked for, else the Prometheus text format
/// (0.0.4, what `promtool check metrics` and older scrapers read).
pub fn render(metrics: SnapshotMetrics, openmetrics: bool) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(metrics));
    let mut out = String::new();
    if openmetrics {
        prometheus_client::encoding::text::encode(&mut out, &registry)?;
    } else {
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?;
    }
    Ok(out)
}

/// The running endpoint; dropping it stops the thread.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    pub addr: SocketAddr,
}

impl MetricsServer {
    /// Listen on `addr`; `doc` takes a snapshot (None: the loop did not answer).
    pub fn start(
        addr: &str,
        facts: PoolFacts,
        doc: impl Fn() -> Option<StatusDoc> + Send + 'static,
    ) -> anyhow::Result<MetricsServer> {
        let server = tiny_http::Server::http(addr)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("binding the metrics endpoint {addr}"))?;
        let bound = server
            .server_addr()
            .to_ip()
            .context("the metrics endpoint is not on IP")?;
        let server = Arc::new(server);
        let stop = Arc::new(AtomicBool::new(false));
        let (s, stop_seen) = (server.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                loop {
                    match s.recv() {
                        Ok(req) => respond(req, &facts, &doc),
                        // `unblock` (shutdown) or an accept error: only the first ends it.
                        Err(_) if stop_seen.load(Ordering::Acquire) => break,
                        Err(e) => {
                            tracing::debug!("metrics endpoint: {e}");
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
            })?;
        Ok(MetricsServer {
            server,
            stop,
            thread: Some(thread),
            addr: bound,
        })
    }
}

fn respond(req: tiny_http::Request, facts: &PoolFacts, doc: &dyn Fn() -> Option<StatusDoc>) {
    use tiny_http::{Header, Method, Response};
    let header = |v: &str| Header::from_bytes("Content-Type", v).expect("valid header");
    let path = req.url().split('?').next().unwrap_or("");
    let reply = match (req.method(), path) {
        (Method::Get | Method::Head, "/metrics") => {
            let openmetrics = req.headers().iter().any(|h| {
                h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text")
            });
            match doc() {
                None => {
                    Response::from_string("the engine loop did not answer\n").with_status_code(503)
                }
                Some(d) => {
                    let m = SnapshotMetrics {
                        doc: d,
                        facts: facts.clone(),
                    };
                    match render(m, openmetrics) {
                        Ok(text) => {
                            Response::from_string(text).with_header(header(if openmetrics {
                                OPENMETRICS
                            } else {
                                PROMETHEUS_TEXT
                            }))
                        }
                        Err(_) => Response::from_string("encoding failed\n").with_status_code(500),
                    }
                }
            }
        }
        (Method::Get, "/") => Response::from_string(
            "<html><body><a href=\"/metrics\">fusionraid metrics</a></body></html>\n",
        )
        .with_header(header("text/html; charset=utf-8")),
        _ => Response::from_string("not found\n").with_status_code(404),
    };
    let _ = req.respond(reply);
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
