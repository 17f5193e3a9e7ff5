package envcore

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"strconv"

	"github.com/go-rod/rod/lib/proto"
	"golang.org/x/image/draw"
)

// defaultJPEGQuality is the JPEG quality when ObserveOptions.Quality is 0.
const defaultJPEGQuality = 80

// screenshot captures the viewport into obs.Screenshot and, with
// opts.Marks, draws the set-of-marks picture from the geometry the parser
// measured (see marks.go). Chromium encodes the picture itself when it is
// returned as captured; it is decoded only when it is shrunk or marked.
func (t *tab) screenshot(ctx context.Context, opts ObserveOptions, boxes []elementBox, obs *Observation) error {
	format, quality := proto.PageCaptureScreenshotFormatPng, (*int)(nil)
	if opts.Format == "jpeg" {
		q := opts.Quality
		if q == 0 {
			q = defaultJPEGQuality
		}
		format, quality = proto.PageCaptureScreenshotFormatJpeg, &q
	}
	dpr := obs.Viewport.DeviceScaleFactor
	if dpr <= 0 {
		dpr = 1
	}
	scale := dpr // picture pixels per CSS pixel
	if long := max(obs.Viewport.Width, obs.Viewport.Height); opts.MaxSide > 0 && float64(long)*dpr > float64(opts.MaxSide) {
		scale = float64(opts.MaxSide) / float64(long)
	}
	shrink := scale != dpr
	req := proto.PageCaptureScreenshot{Format: format, Quality: quality}
	if shrink || opts.Marks {
		// The capture is decoded and encoded again: ask for the cheapest
		// lossless one.
		req = proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng, OptimizeForSpeed: true}
	}
	shot, err := req.Call(t.client(ctx))
	if err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	obs.ScreenshotScale = scale
	if !shrink && !opts.Marks {
		obs.Screenshot = shot.Data
		return nil
	}
	img, err := png.Decode(bytes.NewReader(shot.Data))
	if err != nil {
		return fmt.Errorf("screenshot: decode the capture: %w", err)
	}
	pic := toRGBA(img)
	if shrink {
		b := img.Bounds()
		w := max(1, int(float64(b.Dx())*scale/dpr+0.5))
		h := max(1, int(float64(b.Dy())*scale/dpr+0.5))
		small := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.ApproxBiLinear.Scale(small, small.Bounds(), img, b, draw.Src, nil)
		pic = small
	}
	if obs.Screenshot, err = encodeImage(pic, opts.Format, quality); err != nil {
		return err
	}
	if !opts.Marks {
		return nil
	}
	marked := image.NewRGBA(pic.Bounds())
	copy(marked.Pix, pic.Pix)
	obs.SOMLabels = drawMarks(marked, boxes, scale)
	obs.ScreenshotSOM, err = encodeImage(marked, opts.Format, quality)
	return err
}

// toRGBA returns img as an *image.RGBA, converting only when needed.
func toRGBA(img image.Image) *image.RGBA {
	if r, ok := img.(*image.RGBA); ok {
		return r
	}
	r := image.NewRGBA(img.Bounds())
	draw.Draw(r, r.Bounds(), img, img.Bounds().Min, draw.Src)
	return r
}

// encodeImage encodes img as PNG (fast compression) or JPEG.
func encodeImage(img image.Image, format string, quality *int) ([]byte, error) {
	var buf bytes.Buffer
	var err error
	if format == "jpeg" {
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: *quality})
	} else {
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
	}
	if err != nil {
		return nil, fmt.Errorf("screenshot: encode %s: %w", formatName(format), err)
	}
	return buf.Bytes(), nil
}

func formatName(f string) string {
	if f == "" {
		return "png"
	}
	return f
}

// somLabel is the label of the i-th marked element (0-based).
func somLabel(i int) string { return strconv.Itoa(i + 1) }
