package suites

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff},
}

// savePlots lays plots side by side into dir/name.png.
func savePlots(dir, name string, plots ...*plot.Plot) error {
	const w, h = 6 * vg.Inch, 4 * vg.Inch
	img := vgimg.New(w*vg.Length(len(plots)), h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots)}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	f := filepath.Join(dir, name+".png")
	return saveImage(img, f)
}

// stacked is a stacked bar chart: one bar per label, one layer per series.
func stacked(title, ylabel string, labels []string, names []string, values [][]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	var below *plotter.BarChart
	for i, name := range names {
		bc, err := plotter.NewBarChart(plotter.Values(values[i]), vg.Points(22))
		if err != nil {
			return nil, err
		}
		bc.Color = palette[i%len(palette)]
		bc.LineStyle.Width = 0
		if below != nil {
			bc.StackOn(below)
		}
		below = bc
		p.Add(bc)
		p.Legend.Add(name, bc)
	}
	p.Legend.Top = true
	p.NominalX(labels...)
	return p, nil
}

// lines is a line plot of y against x for each series.
func lines(title, xlabel, ylabel string, x []float64, names []string, ys [][]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	for i, name := range names {
		pts := make(plotter.XYs, len(x))
		for k := range x {
			pts[k] = plotter.XY{X: x[k], Y: ys[i][k]}
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		l.Color, s.Color = palette[i%len(palette)], palette[i%len(palette)]
		p.Add(l, s)
		p.Legend.Add(name, l, s)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	return p, nil
}

func plotStep(dir string, rows []StepRow) error {
	var plots []*plot.Plot
	var idles []int // in the order the rows have them
	for _, r := range rows {
		if !slices.Contains(idles, r.IdleMs) {
			idles = append(idles, r.IdleMs)
		}
	}
	for _, idle := range idles {
		var labels []string
		vals := make([][]float64, 3)
		for _, r := range rows {
			if r.IdleMs != idle {
				continue
			}
			labels = append(labels, r.Type)
			vals[0] = append(vals[0], r.Action.P50)
			vals[1] = append(vals[1], r.Settle.P50)
			vals[2] = append(vals[2], r.Extract.P50)
		}
		if len(labels) == 0 {
			continue
		}
		p, err := stacked(fmt.Sprintf("step time, idle window %d ms (p50)", idle), "ms", labels, []string{"action", "settle", "extract"}, vals)
		if err != nil {
			return err
		}
		plots = append(plots, p)
	}
	return savePlots(dir, "step", plots...)
}

func plotScale(dir string, rows []ScaleRow) error {
	x := make([]float64, len(rows))
	sps, p50, p95 := make([]float64, len(rows)), make([]float64, len(rows)), make([]float64, len(rows))
	for i, r := range rows {
		x[i], sps[i], p50[i], p95[i] = float64(r.N), r.StepsPerSec, r.Latency.P50, r.Latency.P95
	}
	a, err := lines("throughput", "environments", "steps/s", x, []string{"steps/s"}, [][]float64{sps})
	if err != nil {
		return err
	}
	b, err := lines("step latency", "environments", "ms", x, []string{"p50", "p95"}, [][]float64{p50, p95})
	if err != nil {
		return err
	}
	return savePlots(dir, "scale", a, b)
}

func plotSystem(dir string, rs []SystemResult) error {
	var labels []string
	launch, reset := make([][]float64, 2), make([][]float64, 2)
	for i := 0; i+1 < len(rs); i += 2 {
		labels = append(labels, human(rs[i].StateBytes))
		for k := 0; k < 2; k++ {
			launch[k] = append(launch[k], rs[i+k].LaunchP50)
			reset[k] = append(reset[k], rs[i+k].ResetP50)
		}
	}
	a, err := grouped("launch p50", "ms", labels, []string{"incus-cow", "full-copy"}, launch)
	if err != nil {
		return err
	}
	b, err := grouped("reset p50", "ms", labels, []string{"incus-cow", "full-copy"}, reset)
	if err != nil {
		return err
	}
	return savePlots(dir, "system", a, b)
}

// grouped is a bar chart with one group per label and one bar per series.
func grouped(title, ylabel string, labels, names []string, values [][]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	w := vg.Points(18)
	for i, name := range names {
		bc, err := plotter.NewBarChart(plotter.Values(values[i]), w)
		if err != nil {
			return nil, err
		}
		bc.Color = palette[i%len(palette)]
		bc.LineStyle.Width = 0
		bc.Offset = w * vg.Length(i-len(names)/2)
		p.Add(bc)
		p.Legend.Add(name, bc)
	}
	p.Legend.Top = true
	p.NominalX(labels...)
	return p, nil
}

func saveImage(img *vgimg.Canvas, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func plotRecovery(dir string, rep *RecoveryReport) error {
	var labels []string
	times := make([][]float64, 2)
	for _, r := range rep.Recovery {
		labels = append(labels, fmt.Sprintf("%d browsers", r.Browsers))
		times[0] = append(times[0], r.FirstNewEnvMs)
		times[1] = append(times[1], r.Recovered.P50)
	}
	a, err := grouped("after a browser kill", "ms", labels, []string{"first new environment", "lost environments back (p50)"}, times)
	if err != nil {
		return err
	}
	labels = nil
	ratios := make([][]float64, 2)
	for _, r := range rep.Cost {
		labels = append(labels, fmt.Sprintf("%d browsers", r.Browsers))
		ratios[0] = append(ratios[0], r.PSSRatio)
		ratios[1] = append(ratios[1], r.CPURatio)
	}
	b, err := grouped("cost against one browser", "x", labels, []string{"memory (PSS)", "CPU per step"}, ratios)
	if err != nil {
		return err
	}
	return savePlots(dir, "recovery", a, b)
}
