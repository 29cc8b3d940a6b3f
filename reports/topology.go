package reports

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/collsim/collsim/model"
)

// TopologyPlot draws a cluster as the model built it: the fabric switches
// (spine, leaves, or the single switch) on top, the nodes below, each with
// its NICs coloured by rail and cabled to their switch, and its GPUs in
// their NVLink domain (NVSwitch or mesh). The bottleneck link is drawn in
// red with its utilisation. A large cluster is summarised: the first nodes,
// the bottleneck's node and the last node are drawn, with "… N more nodes"
// in between; likewise GPUs, NICs and leaves past what fits.
type TopologyPlot struct {
	Title   string
	Caption string
	// Cluster is the built cluster; it must not be nil.
	Cluster *model.Cluster
	// Bottleneck names the bottleneck link as the simulator does ("from->to"
	// with element names, e.g. "node0/nic0->fabric/switch"); empty for
	// none. Utilization is its busy share in [0, 1], NaN when unknown;
	// Class is its class in words ("NIC", "NVLink").
	Bottleneck  string
	Utilization float64
	Class       string
}

func (p TopologyPlot) isBlock()     {}
func (p TopologyPlot) kind() string { return "topology picture" }

// PlotTitle returns p.Title; it implements Plot.
func (p TopologyPlot) PlotTitle() string { return p.Title }

// PlotCaption returns p.Caption; it implements Plot.
func (p TopologyPlot) PlotCaption() string { return p.Caption }

func (p TopologyPlot) validate() error {
	c := p.Cluster
	if c == nil || c.Topo == nil || len(c.Nodes) == 0 {
		return errors.New("no cluster")
	}
	if !math.IsNaN(p.Utilization) && !(p.Utilization >= 0 && p.Utilization <= 1+1e-9) {
		return fmt.Errorf("utilisation %v is outside [0, 1]", p.Utilization)
	}
	if p.Bottleneck != "" {
		if _, _, ok := p.endpoints(); !ok {
			return fmt.Errorf("bottleneck %q is not a link of the cluster", p.Bottleneck)
		}
	}
	return nil
}

// endpoints returns the elements at the two ends of the bottleneck link.
func (p TopologyPlot) endpoints() (from, to *model.Element, ok bool) {
	a, b, cut := strings.Cut(p.Bottleneck, "->")
	if !cut {
		return nil, nil, false
	}
	for i := range p.Cluster.Topo.Elements {
		e := &p.Cluster.Topo.Elements[i]
		switch e.Name {
		case a:
			from = e
		case b:
			to = e
		}
	}
	return from, to, from != nil && to != nil
}

// Geometry of the picture, in points.
const (
	topoWidth   = 540.0
	topoMargin  = 12.0
	topoNodeGap = 10.0
	topoGPU     = 15.0 // side of a GPU square
	topoNIC     = 15.0 // side of a NIC square
	topoMaxDraw = 8    // most GPUs or NICs drawn per node, most leaves drawn
	topoMaxNode = 4    // most node boxes drawn
)

// Colours of the picture.
var (
	topoInk     = color.RGBA{0x33, 0x33, 0x33, 0xFF}
	topoMuted   = color.RGBA{0x77, 0x77, 0x77, 0xFF}
	topoBox     = color.RGBA{0xF6, 0xF8, 0xFA, 0xFF}
	topoLine    = color.RGBA{0xBB, 0xBB, 0xBB, 0xFF}
	topoNVLink  = color.RGBA{0x76, 0xB9, 0x00, 0xFF} // NVLink domain
	topoGPUFill = color.RGBA{0xE8, 0xF3, 0xD6, 0xFF}
	topoHot     = color.RGBA{0xA5, 0x00, 0x26, 0xFF} // the bottleneck, as saturated links elsewhere
)

// railColor is the colour of NIC rail r: muted hues, cycled, so that rails
// read apart without competing with the bottleneck's red.
func railColor(r int) color.RGBA {
	cs := [...]color.RGBA{
		{0x4E, 0x79, 0xA7, 0xFF}, {0x59, 0xA1, 0x4F, 0xFF}, {0x9C, 0x75, 0x5F, 0xFF}, {0x76, 0xB7, 0xB2, 0xFF},
		{0xB0, 0x7A, 0xA1, 0xFF}, {0xED, 0xC9, 0x48, 0xFF}, {0x7F, 0x7F, 0x7F, 0xFF}, {0xBA, 0xB0, 0xAC, 0xFF},
	}
	if r < 0 {
		r = 0
	}
	return cs[r%len(cs)]
}

func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B) }

// textWidth returns the width of s in Liberation Sans at size points.
func textWidth(s string, size float64) float64 {
	st := text.Style{Font: sans(vg.Length(size), false), Handler: plot.DefaultTextHandler}
	return float64(st.Width(s))
}

// fitText shortens s with an ellipsis until it is at most w wide.
func fitText(s string, size, w float64) string {
	if textWidth(s, size) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 1 {
		r = r[:len(r)-1]
		if t := string(r) + "…"; textWidth(t, size) <= w {
			return t
		}
	}
	return ""
}

// svgWriter collects SVG elements in y-down coordinates.
type svgWriter struct {
	b bytes.Buffer
}

func (w *svgWriter) rect(x, y, wd, ht float64, fill, stroke color.RGBA, sw float64, rx float64, title string) {
	fmt.Fprintf(&w.b, `<rect x="%.4g" y="%.4g" width="%.4g" height="%.4g" rx="%.3g" style="fill:%s;stroke:%s;stroke-width:%.3g">`,
		x, y, wd, ht, rx, hexColor(fill), hexColor(stroke), sw)
	w.end("rect", title)
}

func (w *svgWriter) line(x1, y1, x2, y2 float64, c color.RGBA, sw float64, title string) {
	fmt.Fprintf(&w.b, `<line x1="%.4g" y1="%.4g" x2="%.4g" y2="%.4g" style="stroke:%s;stroke-width:%.3g">`, x1, y1, x2, y2, hexColor(c), sw)
	w.end("line", title)
}

// end closes the element tag, with a <title> (the hover text) first when
// title is not empty.
func (w *svgWriter) end(tag, title string) {
	if title != "" {
		fmt.Fprintf(&w.b, "<title>%s</title>", html.EscapeString(title))
	}
	w.b.WriteString("</" + tag + ">\n")
}

// text draws s with its anchor ("start", "middle", "end") at (x, y), the
// baseline at y.
func (w *svgWriter) text(x, y float64, s string, size float64, c color.RGBA, anchor string, bold bool) {
	weight := "normal"
	if bold {
		weight = "bold"
	}
	halo := ""
	if bold {
		// a white outline under bold labels keeps them legible over lines
		halo = ";paint-order:stroke;stroke:#FFFFFF;stroke-width:3px;stroke-linejoin:round"
	}
	fmt.Fprintf(&w.b, `<text x="%.4g" y="%.4g" style="font-family:'Liberation Sans',Arial,Helvetica,sans-serif;font-size:%.3gpx;font-weight:%s;fill:%s;text-anchor:%s%s">%s</text>`+"\n",
		x, y, size, weight, hexColor(c), anchor, halo, html.EscapeString(s))
}

// topoNode is what the picture shows of one node.
type topoNode struct {
	idx  int // node index, -1 for the "more nodes" box
	more int // nodes the box stands for when idx is -1
}

// shownNodes picks the nodes to draw: all when they fit, else the first
// ones, the bottleneck's node and the last, with one "more" box for the
// rest in the first gap.
func shownNodes(n, hot int) []topoNode {
	if n <= topoMaxNode {
		out := make([]topoNode, n)
		for i := range out {
			out[i] = topoNode{idx: i}
		}
		return out
	}
	keep := []int{0, 1}
	if hot > 1 && hot < n-1 {
		keep = append(keep, hot)
	} else {
		keep = append(keep, 2)
	}
	keep = append(keep, n-1)
	var out []topoNode
	for i, k := range keep {
		if i > 0 && k > keep[i-1]+1 {
			out = append(out, topoNode{idx: -1, more: k - keep[i-1] - 1})
		}
		out = append(out, topoNode{idx: k})
	}
	return out
}

// render draws the picture as a standalone SVG document shaped like
// vgsvg's, so that it inlines like the other plots.
func (p TopologyPlot) render(*palette) ([]byte, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	c := p.Cluster
	topo := c.Topo
	var hotFrom, hotTo *model.Element
	if p.Bottleneck != "" {
		hotFrom, hotTo, _ = p.endpoints()
	}
	hotNode := -1
	for _, e := range []*model.Element{hotFrom, hotTo} {
		if e != nil && e.Node >= 0 {
			hotNode = e.Node
		}
	}
	nodes := shownNodes(c.NumNodes(), hotNode)

	// Fabric switches by tier: cores on top, spines, then the leaves (or
	// the single switch) the NICs are cabled to.
	var tiers [3][]*model.Element
	tierOf := map[model.ElemID]int{}
	for i := range topo.Elements {
		e := &topo.Elements[i]
		if e.Kind != model.KindSwitch {
			continue
		}
		t := 0
		switch {
		case strings.Contains(e.Name, "core"):
			t = 2
		case strings.Contains(e.Name, "spine"):
			t = 1
		}
		tiers[t] = append(tiers[t], e)
		tierOf[e.ID] = t
	}
	// uplink[nic element] = switch element the NIC is cabled to.
	uplink := map[model.ElemID]model.ElemID{}
	for _, l := range topo.Links {
		a, b := topo.Elem(l.From), topo.Elem(l.To)
		if l.Kind == model.LinkNet && a.Kind == model.KindNIC && b.Kind == model.KindSwitch {
			uplink[a.ID] = b.ID
		}
	}

	var w svgWriter
	inner := topoWidth - 2*topoMargin
	y := topoMargin + 4.0
	title := wrapText(text.Style{Font: sans(titleSize, true), Handler: plot.DefaultTextHandler}, p.Title, vg.Length(inner))
	for _, line := range strings.Split(title, "\n") {
		y += 13
		w.text(topoWidth/2, y, line, titleSize, topoInk, "middle", true)
	}
	y += 10

	// Lay the switch rows out: upper tiers of more than four switches are
	// one box, leaves past eight are counted in a last box.
	const swH = 20.0
	type swBox struct {
		x, top, w float64
		label     string
		muted     bool
		members   []*model.Element
	}
	var boxes []swBox
	boxOf := map[model.ElemID]int{}
	tierWord := [3][2]string{{"leaf", "leaves"}, {"spine", "spines"}, {"core switch", "core switches"}}
	for t := 2; t >= 0; t-- {
		sws := tiers[t]
		if len(sws) == 0 {
			continue
		}
		var row []swBox
		switch {
		case t > 0 && len(sws) > 4:
			row = []swBox{{label: fmt.Sprintf("%d %s", len(sws), tierWord[t][1]), members: sws}}
		case t == 0 && len(sws) > topoMaxDraw:
			for _, e := range sws[:topoMaxDraw-1] {
				row = append(row, swBox{members: []*model.Element{e}})
			}
			row = append(row, swBox{label: fmt.Sprintf("+%d %s", len(sws)-(topoMaxDraw-1), tierWord[t][1]), muted: true, members: sws[topoMaxDraw-1:]})
		default:
			for _, e := range sws {
				row = append(row, swBox{members: []*model.Element{e}})
			}
		}
		bw := math.Min((inner-float64(len(row)-1)*8)/float64(len(row)), 160)
		if len(row) == 1 {
			bw = math.Min(inner*0.5, 220)
		}
		x0 := topoWidth/2 - (float64(len(row))*bw+float64(len(row)-1)*8)/2
		for i := range row {
			row[i].x, row[i].top, row[i].w = x0+float64(i)*(bw+8), y, bw
			if row[i].label == "" {
				name := strings.TrimPrefix(row[i].members[0].Name, "fabric/")
				if name == "switch" {
					name = "network switch"
				}
				row[i].label = name
			}
			for _, e := range row[i].members {
				boxOf[e.ID] = len(boxes)
			}
			boxes = append(boxes, row[i])
		}
		y += swH + 34
		if t == 0 {
			y += 12
		}
	}
	// Cables between tiers first, boxes over them.
	type pair struct{ a, b int }
	drawnPair := map[pair]bool{}
	hotDrawn := false
	for _, l := range topo.Links {
		a, b := topo.Elem(l.From), topo.Elem(l.To)
		if l.Kind != model.LinkNet || a.Kind != model.KindSwitch || b.Kind != model.KindSwitch || tierOf[b.ID] != tierOf[a.ID]+1 {
			continue
		}
		lo, hi := boxes[boxOf[a.ID]], boxes[boxOf[b.ID]]
		hot := !hotDrawn && (a == hotFrom && b == hotTo || a == hotTo && b == hotFrom)
		k := pair{boxOf[a.ID], boxOf[b.ID]}
		if drawnPair[k] && !hot {
			continue // parallel cables between the same boxes: one line
		}
		drawnPair[k] = true
		hotDrawn = hotDrawn || hot
		x1, y1, x2, y2 := lo.x+lo.w/2, lo.top, hi.x+hi.w/2, hi.top+swH
		w.line(x1, y1, x2, y2, pick(hot, topoHot, topoLine), pick(hot, 3.0, 1.5), a.Name+" ↔ "+b.Name)
		if hot {
			w.text((x1+x2)/2+6, (y1+y2)/2, utilLabel(p.Utilization), 9, topoHot, "start", true)
		}
	}
	pos := map[model.ElemID][2]float64{} // bottom centre of the box that holds each switch
	for _, b := range boxes {
		hot := slices.ContainsFunc(b.members, func(e *model.Element) bool { return p.isHot(e, hotFrom, hotTo) })
		title := b.members[0].Name
		if len(b.members) > 1 {
			title = fmt.Sprintf("%s … %s", b.members[0].Name, b.members[len(b.members)-1].Name)
		}
		if b.muted {
			w.text(b.x+b.w/2, b.top+14, fitText(b.label, 9, b.w), 9, topoMuted, "middle", false)
		} else {
			w.rect(b.x, b.top, b.w, swH, topoBox, pick(hot, topoHot, topoInk), pick(hot, 2.0, 1.0), 3, title)
			w.text(b.x+b.w/2, b.top+14, fitText(b.label, 9, b.w-4), 9, topoInk, "middle", false)
		}
		for _, e := range b.members {
			pos[e.ID] = [2]float64{b.x + b.w/2, b.top + swH}
		}
	}

	// Node boxes.
	cols := len(nodes)
	nw := (inner - float64(cols-1)*topoNodeGap) / float64(cols)
	g := c.GPUsPerNode()
	gpuRows := 1
	if g > topoMaxDraw/2 && nw < float64(topoMaxDraw)*(topoGPU+3)+12 {
		gpuRows = 2
	}
	perRow := min(g, topoMaxDraw)
	if gpuRows == 2 {
		perRow = (min(g, topoMaxDraw) + 1) / 2
	}
	nodeH := 6 + topoNIC + 30 + float64(gpuRows)*(topoGPU+4) + 44
	hasNVS := c.Nodes[0].NVSwitch != model.None
	nvGen := c.GPUModel().NVLinkGen
	nvlinks := false
	for _, l := range topo.Links {
		if l.Kind == model.LinkNVLink {
			nvlinks = true
			break
		}
	}
	var hotNote string
	for k, tn := range nodes {
		x := topoMargin + float64(k)*(nw+topoNodeGap)
		if tn.idx < 0 {
			w.rect(x, y, nw, nodeH, color.RGBA{0xFF, 0xFF, 0xFF, 0xFF}, topoLine, 1, 4, "")
			w.text(x+nw/2, y+nodeH/2-4, "…", 14, topoMuted, "middle", true)
			w.text(x+nw/2, y+nodeH/2+12, fitText(fmt.Sprintf("%d more nodes", tn.more), 9, nw-6), 9, topoMuted, "middle", false)
			continue
		}
		ne := c.Nodes[tn.idx]
		nodeHot := hotNode == tn.idx && !p.drawnHot(hotFrom, hotTo)
		w.rect(x, y, nw, nodeH, topoBox, pick(nodeHot, topoHot, topoInk), pick(nodeHot, 2.0, 1.0), 4, fmt.Sprintf("node%d", tn.idx))
		label := fmt.Sprintf("node%d", tn.idx)
		if c.Spec.Node.Name != "" {
			label += " · " + c.Spec.Node.Name
		}
		// NICs along the top edge, so that their cables do not cross the box.
		nics := ne.NICs
		drawn := min(len(nics), topoMaxDraw)
		ny := y + 5
		w.text(x+6, ny+topoNIC+10, fitText(label, 9, nw-12), 9, topoInk, "start", true)
		step := math.Min((nw-12)/float64(max(drawn, 1)), topoNIC+6)
		for i := 0; i < drawn; i++ {
			e := topo.Elem(nics[i])
			nx := x + 6 + float64(i)*step
			rail := 0
			if e.NIC != nil {
				rail = e.NIC.Rail
			}
			hot := p.isHot(e, hotFrom, hotTo)
			if up, ok := uplink[e.ID]; ok {
				if sp, ok := pos[up]; ok {
					upHot := hot && p.isHot(topo.Elem(up), hotFrom, hotTo)
					w.line(nx+topoNIC/2, ny, sp[0], sp[1], pick(upHot, topoHot, railColor(rail)), pick(upHot, 3.0, 1.0), e.Name+" ↔ "+topo.Elem(up).Name)
					if upHot {
						hotNote = utilLabel(p.Utilization)
						mx, my := (nx+topoNIC/2+sp[0])/2, (ny+sp[1])/2
						w.text(mx+6, my, hotNote, 9, topoHot, "start", true)
					}
				}
			}
			title := e.Name
			if e.NIC != nil {
				title += fmt.Sprintf(": %s %s, rail %d", e.NIC.Speed.Name, e.NIC.Kind, rail)
			}
			w.rect(nx, ny, topoNIC-2, topoNIC-2, railColor(rail), pick(hot, topoHot, topoInk), pick(hot, 2.0, 0.5), 2, title)
		}
		if len(nics) > drawn {
			w.text(x+nw-6, ny+11, fmt.Sprintf("+%d", len(nics)-drawn), 8, topoMuted, "end", false)
		}
		if len(nics) > 0 {
			e := topo.Elem(nics[0])
			what := fmt.Sprintf("%d NIC", len(nics))
			if len(nics) > 1 {
				what += "s"
			}
			if e.NIC != nil {
				what += fmt.Sprintf(", %s %s", e.NIC.Speed.Name, e.NIC.Kind)
			}
			w.text(x+6, ny+topoNIC+21, fitText(what, 8, nw-12), 8, topoMuted, "start", false)
		}
		// GPUs in their NVLink domain.
		gy := ny + topoNIC + 28
		domH := float64(gpuRows)*(topoGPU+4) + 30
		if hasNVS {
			domH += 10
		}
		domHot := false
		for _, e := range []*model.Element{hotFrom, hotTo} {
			if e != nil && e.Node == tn.idx && (e.Kind == model.KindNVSwitch || e.Kind == model.KindGPU) && p.Class == "NVLink" {
				domHot = true
			}
		}
		if nvlinks {
			w.rect(x+4, gy, nw-8, domH, color.RGBA{0xFF, 0xFF, 0xFF, 0xFF}, pick(domHot, topoHot, topoNVLink), pick(domHot, 2.5, 1.5), 4, "NVLink domain")
		}
		gx := x + 10
		gstep := math.Min((nw-20)/float64(max(perRow, 1)), topoGPU+4)
		for i := 0; i < min(g, topoMaxDraw); i++ {
			e := topo.Elem(ne.GPUs[i])
			r, col := i/perRow, i%perRow
			hot := p.isHot(e, hotFrom, hotTo)
			w.rect(gx+float64(col)*gstep, gy+5+float64(r)*(topoGPU+4), topoGPU-2, topoGPU-2, topoGPUFill, pick(hot, topoHot, topoInk), pick(hot, 2.0, 0.5), 2,
				fmt.Sprintf("%s: %s", e.Name, e.GPU.Name))
			w.text(gx+float64(col)*gstep+(topoGPU-2)/2, gy+5+float64(r)*(topoGPU+4)+9.5, strconv.Itoa(i), 7, topoInk, "middle", false)
		}
		if g > topoMaxDraw {
			w.text(x+nw-8, gy+5+10, fmt.Sprintf("+%d", g-topoMaxDraw), 8, topoMuted, "end", false)
		}
		by := gy + 5 + float64(gpuRows)*(topoGPU+4)
		if hasNVS {
			nvsHot := hotFrom != nil && hotFrom.Kind == model.KindNVSwitch && hotFrom.Node == tn.idx || hotTo != nil && hotTo.Kind == model.KindNVSwitch && hotTo.Node == tn.idx
			w.rect(x+10, by, nw-20, 8, pick(nvsHot, topoHot, topoNVLink), pick(nvsHot, topoHot, topoNVLink), 0.5, 2, "NVSwitch")
			by += 10
		}
		dom := "PCIe only"
		switch {
		case hasNVS:
			dom = fmt.Sprintf("NVLink%d, NVSwitch", nvGen)
		case nvlinks:
			dom = fmt.Sprintf("NVLink%d mesh", nvGen)
		}
		w.text(x+10, by+9, fitText(fmt.Sprintf("%d x %s", g, c.GPUModel().Name), 8, nw-20), 8, topoMuted, "start", false)
		w.text(x+10, by+19, fitText(dom, 8, nw-20), 8, topoMuted, "start", false)
		if nodeHot {
			w.text(x+6, y+nodeH-6, fitText(p.hotText(), 8, nw-12), 8, topoHot, "start", true)
		}
	}
	y += nodeH + 8

	// Key: rails and the bottleneck.
	var rails []int
	for _, id := range c.Nodes[0].NICs {
		if e := topo.Elem(id); e.NIC != nil && !slices.Contains(rails, e.NIC.Rail) {
			rails = append(rails, e.NIC.Rail)
		}
	}
	kx := topoMargin
	y += 12
	if len(rails) > 0 {
		w.text(kx, y, "rails:", 8, topoMuted, "start", false)
		kx += 26
		for i, r := range rails {
			if i == topoMaxDraw {
				w.text(kx, y, "…", 8, topoMuted, "start", false)
				kx += 10
				break
			}
			w.rect(kx, y-8, 9, 9, railColor(r), railColor(r), 0.5, 1, fmt.Sprintf("rail %d", r))
			w.text(kx+11, y, strconv.Itoa(r), 8, topoMuted, "start", false)
			kx += 11 + textWidth(strconv.Itoa(r), 8) + 6
		}
		kx += 8
	}
	if nvlinks {
		w.rect(kx, y-8, 9, 9, color.RGBA{0xFF, 0xFF, 0xFF, 0xFF}, topoNVLink, 1.5, 1, "")
		w.text(kx+12, y, "NVLink domain", 8, topoMuted, "start", false)
		kx += 12 + textWidth("NVLink domain", 8) + 12
	}
	if p.Bottleneck != "" {
		s := fitText("bottleneck: "+p.hotText(), 8, topoWidth-topoMargin-kx-12)
		w.rect(kx, y-8, 9, 9, topoHot, topoHot, 0.5, 1, "")
		w.text(kx+12, y, s, 8, topoHot, "start", true)
	}
	y += 10
	h := math.Ceil(y + topoMargin/2)

	var out bytes.Buffer
	fmt.Fprintf(&out, "<?xml version=\"1.0\"?>\n<svg width=\"%gpt\" height=\"%gpt\" viewBox=\"0 0 %g %g\"\n\txmlns=\"http://www.w3.org/2000/svg\"\n\txmlns:xlink=\"http://www.w3.org/1999/xlink\">\n",
		topoWidth, h, topoWidth, h)
	fmt.Fprintf(&out, `<rect x="0" y="0" width="%g" height="%g" style="fill:#FFFFFF" />`+"\n", topoWidth, h)
	out.Write(w.b.Bytes())
	out.WriteString("</svg>\n")
	return out.Bytes(), nil
}

// isHot reports whether e is an end of the bottleneck link.
func (p TopologyPlot) isHot(e, from, to *model.Element) bool {
	return e != nil && (e == from || e == to)
}

// drawnHot reports whether the bottleneck link is one the picture draws
// (a NIC uplink, a leaf-spine link, an NVLink): otherwise the node that
// holds it is outlined instead.
func (p TopologyPlot) drawnHot(from, to *model.Element) bool {
	if from == nil || to == nil {
		return false
	}
	k := func(e *model.Element, kinds ...model.Kind) bool { return slices.Contains(kinds, e.Kind) }
	net := k(from, model.KindNIC, model.KindSwitch) && k(to, model.KindNIC, model.KindSwitch)
	nv := k(from, model.KindGPU, model.KindNVSwitch) && k(to, model.KindGPU, model.KindNVSwitch) && p.Class == "NVLink"
	return net || nv
}

// hotText describes the bottleneck: "node0/nic0->fabric/switch (NIC), 100% busy".
func (p TopologyPlot) hotText() string {
	s := p.Bottleneck
	if p.Class != "" {
		s += " (" + p.Class + ")"
	}
	if math.IsNaN(p.Utilization) {
		return s
	}
	return s + ", " + utilLabel(p.Utilization)
}

// utilLabel says how busy a link is, "" when unknown (NaN).
func utilLabel(u float64) string {
	if math.IsNaN(u) {
		return ""
	}
	return fmtPercent(u) + " busy"
}

func pick[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

// DataTable lists what the picture shows: the node, its GPUs and NICs,
// the fabric, and the bottleneck with its utilisation.
func (p TopologyPlot) DataTable() Table {
	t := Table{Columns: []string{"part", "what the model has"}, Align: []Align{AlignLeft, AlignLeft}}
	c := p.Cluster
	if c == nil || c.Topo == nil || len(c.Nodes) == 0 {
		return t
	}
	ne := c.Nodes[0]
	t.Rows = append(t.Rows, []string{"nodes", strconv.Itoa(c.NumNodes())})
	gpu := c.GPUModel()
	t.Rows = append(t.Rows, []string{"GPUs per node", fmt.Sprintf("%d x %s", len(ne.GPUs), gpu.Name)})
	nv := "none (PCIe only)"
	// The NVLink lanes leaving the first GPU: one link of them all to an
	// NVSwitch, or one link per peer (a pair's lanes) on a mesh.
	lanes := 0
	if len(ne.GPUs) > 0 {
		for _, l := range c.Topo.Out[ne.GPUs[0]] {
			if lk := &c.Topo.Links[l]; lk.Kind == model.LinkNVLink {
				lanes += lk.Lanes
			}
		}
	}
	if lanes > 0 {
		nv = fmt.Sprintf("NVLink%d, %d links per GPU", gpu.NVLinkGen, lanes)
		if ne.NVSwitch != model.None {
			nv += ", through NVSwitch"
		}
	}
	t.Rows = append(t.Rows, []string{"NVLink domain", nv})
	nics := "none"
	if len(ne.NICs) > 0 {
		if e := c.Topo.Elem(ne.NICs[0]); e.NIC != nil {
			var rails []int
			for _, id := range ne.NICs {
				if r := c.Topo.Elem(id).NIC; r != nil && !slices.Contains(rails, r.Rail) {
					rails = append(rails, r.Rail)
				}
			}
			nics = fmt.Sprintf("%d x %s %s on %d rails", len(ne.NICs), e.NIC.Speed.Name, e.NIC.Kind, len(rails))
		}
	}
	t.Rows = append(t.Rows, []string{"NICs per node", nics})
	var leaves, spines int
	for _, e := range c.Topo.Elements {
		if e.Kind == model.KindSwitch {
			if strings.Contains(e.Name, "spine") {
				spines++
			} else {
				leaves++
			}
		}
	}
	fab := "none (one node)"
	switch {
	case spines > 0:
		fab = fmt.Sprintf("%d leaves under %d spine", leaves, spines)
	case leaves > 0:
		fab = "one switch"
	}
	t.Rows = append(t.Rows, []string{"fabric", fab})
	if p.Bottleneck != "" {
		t.Rows = append(t.Rows, []string{"bottleneck", p.hotText()})
	}
	return t
}
