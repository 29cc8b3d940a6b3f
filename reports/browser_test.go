package reports

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collsim/collsim/internal/browsertest"
)

// runChromium renders the page at htmlPath headless to a PNG with all
// background networking off, every host name unresolvable, and a network
// log. It returns the screenshot and the requests in the log.
func runChromium(t *testing.T, bin, htmlPath string) (image.Image, []netRequest) {
	t.Helper()
	work := t.TempDir()
	shot := filepath.Join(work, "shot.png")
	netlog := filepath.Join(work, "netlog.json")
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd, cancel := browsertest.Command(bin, work, abs,
		"--disable-quic",
		"--log-net-log="+netlog,
		"--screenshot="+shot,
		"--window-size=1280,2000")
	defer cancel()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, browsertest.Tail(out, 2000))
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, browsertest.Tail(out, 2000))
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return img, readNetLog(t, netlog)
}

// netRequest is one URL request from a Chromium net log.
type netRequest struct {
	URL       string `json:"url"`
	Initiator string `json:"initiator"`
	// NIK is the network isolation key: "file:// ..." for requests made on
	// behalf of a page loaded from a file, "null null" or a Google origin
	// for the browser's own background requests.
	NIK string `json:"network_isolation_key"`
}

// fromPage reports whether the page (not the browser itself) made r.
func (r netRequest) fromPage() bool {
	return strings.HasPrefix(r.NIK, "file://") || r.Initiator != "" && r.Initiator != "not an origin"
}

// readNetLog returns the URL_REQUEST_START_JOB events of a net log.
func readNetLog(t *testing.T, path string) []netRequest {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("net log: %v", err)
	}
	var log struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int             `json:"type"`
			Params json.RawMessage `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(raw, &log); err != nil {
		// A log cut short lacks its closing brackets.
		if err2 := json.Unmarshal(append(bytes.TrimRight(bytes.TrimSpace(raw), ","), "]}"...), &log); err2 != nil {
			t.Fatalf("net log: %v", err)
		}
	}
	start, ok := log.Constants.LogEventTypes["URL_REQUEST_START_JOB"]
	if !ok {
		t.Fatal("net log has no URL_REQUEST_START_JOB event type")
	}
	var out []netRequest
	for _, e := range log.Events {
		if e.Type != start || len(e.Params) == 0 {
			continue
		}
		var r netRequest
		if err := json.Unmarshal(e.Params, &r); err != nil {
			t.Fatalf("net log event: %v", err)
		}
		if r.URL != "" {
			out = append(out, r)
		}
	}
	return out
}

// pageNetworkRequests returns the URLs the page asked for that are not
// file: or data: URLs.
func pageNetworkRequests(reqs []netRequest) []string {
	var out []string
	for _, r := range reqs {
		if r.fromPage() && !strings.HasPrefix(r.URL, "file:") && !strings.HasPrefix(r.URL, "data:") {
			out = append(out, r.URL)
		}
	}
	return out
}

// inkStats counts the pixels that are not near-white, the distinct
// colours, and the pixels close to one of the first four series colours.
func inkStats(img image.Image) (ink, colours, blue int) {
	var series [][3]uint32
	for i := range 4 {
		c := seriesColor(i)
		series = append(series, [3]uint32{uint32(c.R), uint32(c.G), uint32(c.B)})
	}
	seen := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r8, g8, b8 := r>>8, g>>8, bl>>8
			seen[r8<<16|g8<<8|b8] = true
			if r8 < 0xF0 || g8 < 0xF0 || b8 < 0xF0 {
				ink++
			}
			for _, c := range series {
				if near(r8, c[0]) && near(g8, c[1]) && near(b8, c[2]) {
					blue++
					break
				}
			}
		}
	}
	return ink, len(seen), blue
}

func near(a, b uint32) bool { return a+12 >= b && a <= b+12 }

// TestBrowserRender renders each kind of report in headless Chromium and
// checks that the page is drawn (not blank, plots visible) and that it
// asked the network for nothing. It skips when no Chromium is installed.
func TestBrowserRender(t *testing.T) {
	bin := browsertest.Require(t, "browser rendering")
	dir := t.TempDir()
	for _, fx := range fixtures() {
		t.Run(fx.name, func(t *testing.T) {
			path := filepath.Join(dir, fx.name+".html")
			if err := WriteFile(path, fx.doc); err != nil {
				t.Fatal(err)
			}
			page, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if refs := externalRefs(string(page)); len(refs) > 0 {
				t.Errorf("page references external resources: %q", refs)
			}
			img, reqs := runChromium(t, bin, path)
			size := img.Bounds().Dx() * img.Bounds().Dy()
			ink, colours, blue := inkStats(img)
			t.Logf("%dx%d screenshot: %.1f%% ink, %d colours, %d series-coloured pixels; %d requests in the net log",
				img.Bounds().Dx(), img.Bounds().Dy(), 100*float64(ink)/float64(size), colours, blue, len(reqs))
			// A blank page has no ink and one colour; the smallest report
			// (a title and one line) has about 10000 inked pixels.
			if ink < 2000 || colours < 16 {
				t.Errorf("screenshot looks blank: %d of %d pixels inked, %d colours", ink, size, colours)
			}
			if fx.name != "minimal" && blue < 200 {
				t.Errorf("only %d pixels of the series colours: plots not drawn?", blue)
			}
			if got := pageNetworkRequests(reqs); len(got) > 0 {
				t.Errorf("page made network requests: %q", got)
			}
			for _, p := range browsertest.OverflowProblems(t, bin, path) {
				t.Errorf("overflows its box: %s", p)
			}
		})
	}
	// The overflow check itself: a page with a word too long for its box,
	// a table too wide for the page and an SVG title past the figure's edge
	// must be caught.
	t.Run("overflow detector", func(t *testing.T) {
		path := filepath.Join(dir, "overflow.html")
		bad := `<!DOCTYPE html><html><head><style>p{width:100px;overflow:hidden} .tw{overflow-x:auto;max-width:300px}</style></head><body>` +
			`<p>` + strings.Repeat("x", 80) + `</p><div class="tw"><table><tr><td>` + strings.Repeat("y", 120) + `</td></tr></table></div>` +
			`<svg viewBox="0 0 100 50" width="100" height="50"><text x="-40" y="20">a title cut at both ends</text></svg></body></html>`
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		got := browsertest.OverflowProblems(t, bin, path)
		want := []string{"p ", "div.tw ", "svg text outside its figure"}
		for _, w := range want {
			if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, w) }) {
				t.Errorf("missed %q; found %q", w, got)
			}
		}
	})
	// The detector itself: a page that does load things from the network
	// must be caught, so the checks above are not vacuous.
	t.Run("detector", func(t *testing.T) {
		path := filepath.Join(dir, "bad.html")
		bad := `<!DOCTYPE html><html><head><style>@import url(https://example.com/a.css); body{background:url(http://example.org/b.png)}</style></head>` +
			`<body><p>bad</p><img src="https://example.net/c.png"></body></html>`
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if refs := externalRefs(bad); len(refs) != 3 {
			t.Errorf("static check found %q, want 3 references", refs)
		}
		_, reqs := runChromium(t, bin, path)
		if got := pageNetworkRequests(reqs); len(got) == 0 {
			t.Errorf("net log check missed the page's requests; log had %d requests", len(reqs))
		}
	})
}
