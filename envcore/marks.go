package envcore

import (
	"image"
	"image/color"
	"math"

	"golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Set-of-marks are drawn on the captured picture, not in the page: nothing
// enters the DOM, so the page's layout, its scripts and the next
// observation's HTML are exactly what they would be without marks.
//
// Labels are short numbers ("1", "2", ...) in document order, mapped to the
// semantic ids by Observation.SOMLabels, rather than the ids themselves:
// ids are readable but often 15-30 characters ("categories.home-kitchen-2"),
// and labels that long hide the elements they name and each other on a
// dense page. Numbers are what set-of-marks prompting (VisualWebArena,
// WebVoyager) uses; the agent reads the number off the picture and the id
// from the mapping (or the text observation, which carries the same ids).

// markColors are the outline and label colours, cycled in label order so
// that neighbouring boxes differ.
var markColors = []color.RGBA{
	{230, 25, 75, 255},  // red
	{0, 130, 200, 255},  // blue
	{60, 180, 75, 255},  // green
	{145, 30, 180, 255}, // purple
	{245, 130, 48, 255}, // orange
	{0, 128, 128, 255},  // teal
	{240, 50, 230, 255}, // magenta
	{128, 0, 0, 255},    // maroon
	{0, 0, 128, 255},    // navy
	{128, 128, 0, 255},  // olive
}

// markLine is the outline's width in picture pixels, drawn inside the box.
const markLine = 2

// markColor is the colour of the i-th mark (0-based).
func markColor(i int) color.RGBA { return markColors[i%len(markColors)] }

// markRect is an element's box in picture pixels (scale picture pixels per
// CSS pixel), clipped to the picture; ok is false when nothing of it is
// inside.
func markRect(bbox [4]float64, scale float64, bounds image.Rectangle) (image.Rectangle, bool) {
	r := image.Rect(
		int(math.Round(bbox[0]*scale)), int(math.Round(bbox[1]*scale)),
		int(math.Round((bbox[0]+bbox[2])*scale)), int(math.Round((bbox[1]+bbox[3])*scale)),
	).Intersect(bounds)
	return r, !r.Empty()
}

// drawMarks boxes and labels every element with SetOfMarks on img and
// returns the labels' mapping to ids.
func drawMarks(img *image.RGBA, boxes []elementBox, scale float64) map[string]string {
	labels := map[string]string{}
	face := basicfont.Face7x13
	n := 0
	for _, b := range boxes {
		if !b.SetOfMarks {
			continue
		}
		r, ok := markRect(b.BBox, scale, img.Bounds())
		if !ok {
			continue
		}
		label, c := somLabel(n), markColor(n)
		n++
		labels[label] = b.ID
		src := image.NewUniform(c)
		line := min(markLine, r.Dx(), r.Dy())
		for _, edge := range []image.Rectangle{
			{r.Min, image.Pt(r.Max.X, r.Min.Y+line)},
			{image.Pt(r.Min.X, r.Max.Y-line), r.Max},
			{r.Min, image.Pt(r.Min.X+line, r.Max.Y)},
			{image.Pt(r.Max.X-line, r.Min.Y), r.Max},
		} {
			draw.Draw(img, edge, src, image.Point{}, draw.Src)
		}
		// The label: white digits on the mark's colour, in the box's
		// top-left corner, so it sits on the element it names.
		w := font.MeasureString(face, label).Ceil() + 4
		h := face.Height + 2
		tag := image.Rect(r.Min.X, r.Min.Y, r.Min.X+w, r.Min.Y+h).Intersect(img.Bounds())
		draw.Draw(img, tag, src, image.Point{}, draw.Src)
		d := font.Drawer{Dst: img, Src: image.White, Face: face,
			Dot: fixed.P(r.Min.X+2, r.Min.Y+1+face.Ascent)}
		d.DrawString(label)
	}
	return labels
}
