package main

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	panelW, panelH = 430.0, 270.0
	columns        = 2
	headerH        = 70.0
	plotLeft       = 120.0 // inside a panel: room for the axis and the left labels
	plotRight      = 110.0 // room for the right labels and the ratios
	plotTop        = 34.0
	plotBottom     = 40.0
	labelGap       = 12.0 // the least vertical distance between two value labels
)

// chart draws one panel per scenario: cost per op (log scale) against the
// sizes, one line per driver, each point labelled with its cost and each
// line's end with the ratio of its last cost to its first. A flat line is a
// cost that does not grow with the work.
func chart(rs []result) []byte {
	ss := scenarios(rs)
	rows := (len(ss) + columns - 1) / columns
	width := columns * panelW
	height := headerH + float64(rows)*panelH
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&sb, `<rect width="%.0f" height="%.0f" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&sb, `<text x="20" y="26" font-size="16" font-weight="bold">Cost of one operation as the work behind it grows</text>`+"\n")
	fmt.Fprintf(&sb, `<text x="20" y="46" fill="#555">ms per op, log scale; each line is one driver at the two sizes, its end labelled with large/small (flat is good)</text>`+"\n")
	x := 20.0
	for _, d := range drivers {
		fmt.Fprintf(&sb, `<line x1="%.0f" y1="60" x2="%.0f" y2="60" stroke="%s" stroke-width="3"/><text x="%.0f" y="64">%s</text>`+"\n",
			x, x+24, d.color, x+30, html.EscapeString(d.label))
		x += 130
	}
	for i, s := range ss {
		panel(&sb, s, float64(i%columns)*panelW, headerH+float64(i/columns)*panelH)
	}
	sb.WriteString("</svg>\n")
	return []byte(sb.String())
}

func panel(sb *strings.Builder, s scenario, ox, oy float64) {
	left, right := ox+plotLeft, ox+panelW-plotRight
	top, bottom := oy+plotTop, oy+panelH-plotBottom
	fmt.Fprintf(sb, `<text x="%.1f" y="%.1f" font-size="14" font-weight="bold">%s</text>`+"\n", ox+20, oy+20, html.EscapeString(s.name))
	lo, hi := decades(s)
	y := func(ms float64) float64 {
		return bottom - (math.Log10(ms)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*(bottom-top)
	}
	xs := make([]float64, len(s.sizes))
	for j := range xs {
		xs[j] = left
		if len(xs) > 1 {
			xs[j] = left + float64(j)*(right-left)/float64(len(xs)-1)
		}
	}
	// Axes and decade grid lines.
	for v := lo; v <= hi*1.0001; v *= 10 {
		fmt.Fprintf(sb, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, left-8, y(v), right+8, y(v))
		fmt.Fprintf(sb, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555">%s ms</text>`+"\n", ox+52, y(v)+4, decadeLabel(v))
	}
	fmt.Fprintf(sb, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", ox+58, top, ox+58, bottom)
	for j, size := range s.sizes {
		fmt.Fprintf(sb, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#333">%s</text>`+"\n", xs[j], bottom+22, html.EscapeString(size))
	}
	// Lines and points, then labels beside the first and the last points,
	// spread apart where they would overlap.
	var leftLabels, rightLabels []label
	for _, d := range drivers {
		cs := s.costs[d.bench]
		var pts []string
		for j, ms := range cs {
			if math.IsNaN(ms) || ms <= 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xs[j], y(ms)))
			fmt.Fprintf(sb, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`, xs[j], y(ms), d.color)
		}
		if len(pts) > 1 {
			fmt.Fprintf(sb, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2.5"/>`, strings.Join(pts, " "), d.color)
		}
		sb.WriteString("\n")
		first, last := cs[0], cs[len(cs)-1]
		if !math.IsNaN(first) && first > 0 {
			leftLabels = append(leftLabels, label{y: y(first) + 4, text: num(first), color: d.color})
		}
		if len(cs) > 1 && !math.IsNaN(last) && last > 0 {
			text := num(last)
			if !math.IsNaN(first) && first > 0 {
				text += fmt.Sprintf("  (%.1fx)", last/first)
			}
			rightLabels = append(rightLabels, label{y: y(last) + 4, text: text, color: d.color})
		}
	}
	for _, l := range spread(leftLabels, bottom+8) {
		fmt.Fprintf(sb, `<text x="%.1f" y="%.1f" text-anchor="end" fill="%s">%s</text>`+"\n", left-10, l.y, l.color, l.text)
	}
	for _, l := range spread(rightLabels, bottom+8) {
		fmt.Fprintf(sb, `<text x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n", right+10, l.y, l.color, l.text)
	}
}

type label struct {
	y     float64
	text  string
	color string
}

// spread moves labels apart so that no two are closer than labelGap,
// keeping their order, and none below bottom where it can.
func spread(ls []label, bottom float64) []label {
	slices.SortStableFunc(ls, func(a, b label) int { return cmpFloat(a.y, b.y) })
	for i := 1; i < len(ls); i++ {
		ls[i].y = max(ls[i].y, ls[i-1].y+labelGap)
	}
	if n := len(ls); n > 0 && ls[n-1].y > bottom {
		ls[n-1].y = bottom
		for i := n - 2; i >= 0; i-- {
			ls[i].y = min(ls[i].y, ls[i+1].y-labelGap)
		}
	}
	return ls
}

// decades is the panel's y range: whole powers of ten around its costs.
func decades(s scenario) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, cs := range s.costs {
		for _, ms := range cs {
			if !math.IsNaN(ms) && ms > 0 {
				lo, hi = min(lo, ms), max(hi, ms)
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 0.1, 1000
	}
	lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}

func decadeLabel(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", v), "0"), ".")
}
