//! Screenshot thumbnails for the report: a PNG decoded, scaled down by a whole factor (each
//! thumbnail pixel the mean of a box of the original's), encoded again. Pure and bounded: the
//! decoder refuses images over [`MAX_PIXELS`].

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
    let mut out = Vec::with_capacity(tw * th * 3);
    let mut sums = vec![0u32; tw * 3];
    for ty in 0..th {
        sums.iter_mut().for_each(|s| *s = 0);
        let rows = (ty * f)..((ty + 1) * f).min(h);
        let n_rows = rows.len();
        for y in rows {
            let row = &buf[y * line..y * line + w * channels];
            for (x, px) in row.chunks_exact(channels).enumerate() {
                let at = (x / f) * 3;
                let (r, g, b) = if channels >= 3 {
                    (px[0], px[1], px[2])
                } else {
                    (px[0], px[0], px[0])
                };
                sums[at] += u32::from(r);
                sums[at + 1] += u32::from(g);
                sums[at + 2] += u32::from(b);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn png_of(w: u32, h: u32, color: png::ColorType, pixel: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::new();
        let mut encoder = png::Encoder::new(&mut bytes, w, h);
        encoder.set_color(color);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().unwrap();
        let data: Vec<u8> = (0..w * h).flat_map(|_| pixel.iter().copied()).collect();
        writer.write_image_data(&data).unwrap();
        writer.finish().unwrap();
        bytes
    }

    #[test]
    fn screenshots_are_scaled_by_a_whole_factor() {
        let t = thumbnail(&png_of(1280, 720, png::ColorType::Rgba, &[10, 20, 30, 255])).unwrap();
        assert_eq!((t.width, t.height), (427, 240));
        assert_eq!((t.source_width, t.source_height), (1280, 720));
        let back = thumbnail(&t.png).unwrap();
        assert_eq!((back.width, back.height), (427, 240), "small ones stay");
        let mut decoder = png::Decoder::new(Cursor::new(&t.png));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        reader.next_frame(&mut buf).unwrap();
        assert_eq!(&buf[..3], &[10, 20, 30], "a box of one colour keeps it");
        let grey = thumbnail(&png_of(20, 10, png::ColorType::Grayscale, &[77])).unwrap();
        assert_eq!((grey.width, grey.height), (20, 10));
    }

    #[test]
    fn what_is_no_png_is_an_error() {
        assert!(thumbnail(b"not a png").is_err());
        assert!(thumbnail(&[]).is_err());
    }
}
