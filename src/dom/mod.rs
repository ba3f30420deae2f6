//! PLACEHOLDER until the DOM module lands.
#![allow(missing_docs)]
use std::collections::BTreeMap;
#[derive(Debug, Clone, serde::Deserialize)]
pub struct IndexedElement {
    pub index: u32,
    pub tag: String,
    pub xpath: String,
    pub id: Option<String>,
    pub name: Option<String>,
    pub attributes: BTreeMap<String, String>,
    pub text: String,
    pub rect: [i64; 4],
}
#[derive(Debug, Clone, serde::Deserialize)]
pub struct MediaHint {
    pub media_count: u32,
    pub image_count: u32,
    pub samples: Vec<serde_json::Value>,
}
#[derive(Debug, Clone, serde::Deserialize)]
pub struct FrameDom {
    pub elements: Vec<IndexedElement>,
    pub pixels_above: i64,
    pub pixels_below: i64,
    pub viewport_height: i64,
    pub page_height: i64,
    pub media: Option<MediaHint>,
}
pub fn parse_frame(value: serde_json::Value) -> Result<FrameDom, String> {
    serde_json::from_value(value).map_err(|e| e.to_string())
}
impl FrameDom {
    pub fn render(&self) -> String {
        String::new()
    }
}
pub struct FrameHeader {
    pub ordinal: usize,
    pub is_main: bool,
    pub url: String,
    pub name: String,
    pub element_count: usize,
    pub first_index: Option<u32>,
    pub last_index: Option<u32>,
    pub read_failure: Option<String>,
}
pub fn render_frames(sections: &[(FrameHeader, String)]) -> String {
    sections
        .iter()
        .map(|s| s.1.clone())
        .collect::<Vec<_>>()
        .join("\n")
}
