//! Screenshot thumbnails for the report: the `moonpilot-thumb` crate (`crates/thumb`), a crate
//! of its own so that its pixel loop is optimised in every profile; its tests run here, with
//! the package's.

pub use moonpilot_thumb::{thumbnail, Thumb, MAX_WIDTH};

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

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
        assert!(t.width <= MAX_WIDTH);
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
    fn a_box_is_its_mean() {
        // Two columns, black and white: scaled by 3 (a width of 1290), each thumbnail pixel is
        // the mean of a 3x3 box.
        let mut bytes = Vec::new();
        let (w, h) = (1290u32, 3u32);
        let mut encoder = png::Encoder::new(&mut bytes, w, h);
        encoder.set_color(png::ColorType::Grayscale);
        let mut writer = encoder.write_header().unwrap();
        let data: Vec<u8> = (0..w * h)
            .map(|i| if i % 3 == 0 { 255 } else { 0 })
            .collect();
        writer.write_image_data(&data).unwrap();
        writer.finish().unwrap();
        let t = thumbnail(&bytes).unwrap();
        assert_eq!((t.width, t.height), (430, 1));
        let mut decoder = png::Decoder::new(Cursor::new(&t.png));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        reader.next_frame(&mut buf).unwrap();
        assert_eq!(&buf[..3], &[85, 85, 85]);
    }

    #[test]
    fn what_is_no_png_is_an_error() {
        assert!(thumbnail(b"not a png").is_err());
        assert!(thumbnail(&[]).is_err());
    }
}
