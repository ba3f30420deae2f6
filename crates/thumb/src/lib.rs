//! Screenshot thumbnails for moonpilot's report: a PNG decoded, scaled down by a whole factor
//! (each thumbnail pixel the mean of a box of the original's), encoded again. Pure and bounded:
//! images over [`MAX_PIXELS`] are refused.
//!
//! A crate of its own only so that its pixel loop is compiled optimised in every profile
//! (`[profile.dev.package.moonpilot-thumb]` in the root manifest): unoptimised, scaling a
//! 1280x800 screenshot took 60-200 ms instead of a few, and the tests time the report as
//! people get it. It knows nothing of moonpilot.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::io::Cursor;

/// The widest thumbnail, in pixels.
pub const MAX_WIDTH: u32 = 480;
/// The largest screenshot decoded (a 16384-px-square viewport is 268 M pixels; a full-page
/// capture may be tall): 64 M pixels, 256 MB of RGBA.
const MAX_PIXELS: u64 = 64 * 1024 * 1024;

/// A scaled screenshot.
#[derive(Debug, Clone)]
pub struct Thumb {
    /// The thumbnail as PNG.
    pub png: Vec<u8>,
    /// Its size in pixels.
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
    /// The original's width in pixels (for the click point, in CSS pixels at scale 1).
    pub source_width: u32,
    /// The original's height in pixels.
    pub source_height: u32,
}

/// Scales the PNG `bytes` to at most [`MAX_WIDTH`] wide; a message when they are no PNG.
pub fn thumbnail(bytes: &[u8]) -> Result<Thumb, String> {
    let mut decoder = png::Decoder::new(Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let (w, h) = {
        let info = reader.info();
        (info.width, info.height)
    };
    if u64::from(w) * u64::from(h) > MAX_PIXELS || w == 0 || h == 0 {
        return Err(format!("a {w}x{h} image is too large to scale"));
    }
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| "the image's size overflows".to_string())?;
    let mut buf = vec![0; size];
    let frame = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
    let channels = match frame.color_type {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => return Err("an indexed PNG was not expanded".into()),
    };
    let factor = w.div_ceil(MAX_WIDTH).max(1);
    let (tw, th) = (w.div_ceil(factor), h.div_ceil(factor));
    let rgb = scale(&buf, frame.line_size, channels, (w, h), factor);
    let mut png = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut png, tw, th);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
        writer.write_image_data(&rgb).map_err(|e| e.to_string())?;
        writer.finish().map_err(|e| e.to_string())?;
    }
    Ok(Thumb {
        png,
        width: tw,
        height: th,
        source_width: w,
        source_height: h,
    })
}

/// Box-filters 8-bit pixels of `channels` channels (rows `line` bytes apart) by `factor`
/// into RGB; alpha is dropped (screenshots are opaque), grey is spread to three channels.
fn scale(buf: &[u8], line: usize, channels: usize, (w, h): (u32, u32), factor: u32) -> Vec<u8> {
    let (w, h, f) = (w as usize, h as usize, factor as usize);
    let (tw, th) = (w.div_ceil(f), h.div_ceil(f));
    let (g, b) = if channels >= 3 { (1, 2) } else { (0, 0) };
    let mut out = Vec::with_capacity(tw * th * 3);
    let mut sums = vec![0u32; tw * 3];
    for ty in 0..th {
        sums.fill(0);
        let rows = (ty * f)..((ty + 1) * f).min(h);
        let n_rows = rows.len();
        for y in rows {
            let row = &buf[y * line..y * line + w * channels];
            for (block, sum) in row.chunks(f * channels).zip(sums.chunks_exact_mut(3)) {
                for px in block.chunks_exact(channels) {
                    sum[0] += u32::from(px[0]);
                    sum[1] += u32::from(px[g]);
                    sum[2] += u32::from(px[b]);
                }
            }
        }
        for tx in 0..tw {
            let cols = ((tx + 1) * f).min(w) - tx * f;
            let n = (cols * n_rows).max(1) as u32;
            for c in 0..3 {
                // A mean of bytes is a byte.
                out.push((sums[tx * 3 + c] / n) as u8);
            }
        }
    }
    out
}
