package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// findChromium returns the path of a Chromium-family browser on PATH, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

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
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--disable-quic", "--disable-extensions", "--disable-default-apps",
		"--user-data-dir="+filepath.Join(work, "profile"),
		"--host-resolver-rules=MAP * ~NOTFOUND",
		"--log-net-log="+netlog,
		"--screenshot="+shot,
		"--window-size=1280,2000",
		(&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String())
	cmd.Env = append(os.Environ(), "HOME="+work)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, tail(out, 2000))
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, tail(out, 2000))
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return img, readNetLog(t, netlog)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
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

// overflowScript measures the page with its own layout once it is laid
// out: every text box whose content is wider than the box (scrollWidth >
// clientWidth), a table wrapper that needs a sideways scroll, a page wider
// than the window, and SVG text drawn outside its plot. It opens every
// <details> first so that the data tables are measured too, and writes
// what it found as JSON into an element the DOM dump carries.
const overflowScript = `<script>
(function(){
  var out=[];
  document.querySelectorAll('details').forEach(function(d){d.open=true;});
  var sel='h1,h2,h3,p,li,th,td,caption,figcaption,summary,.badge,.label,.tw,.code-caption,.sev';
  document.querySelectorAll(sel).forEach(function(el){
    if(el.scrollWidth>el.clientWidth+1){
      out.push(el.tagName.toLowerCase()+(el.className?'.'+el.className:'')+' '+el.scrollWidth+'>'+el.clientWidth+': '+el.textContent.trim().slice(0,100));
    }
  });
  var de=document.documentElement;
  if(de.scrollWidth>window.innerWidth+1){out.push('page '+de.scrollWidth+'>'+window.innerWidth);}
  document.querySelectorAll('svg').forEach(function(svg){
    var r=svg.getBoundingClientRect();
    svg.querySelectorAll('text').forEach(function(t){
      var b=t.getBoundingClientRect();
      if(b.width===0){return;}
      if(b.left<r.left-1||b.right>r.right+1||b.top<r.top-1||b.bottom>r.bottom+1){
        out.push('svg text outside its figure ('+Math.round(b.left-r.left)+'..'+Math.round(b.right-r.left)+' of '+Math.round(r.width)+'): '+t.textContent.slice(0,100));
      }
    });
  });
  var res=document.createElement('pre');
  res.id='overflow-result';
  res.textContent=JSON.stringify({width:window.innerWidth,problems:out});
  document.body.appendChild(res);
})();
</script>`

var (
	cspMetaRE       = regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`)
	overflowResRE   = regexp.MustCompile(`(?s)<pre id="overflow-result">(.*?)</pre>`)
	overflowWindowW = 1280
)

// overflowProblems lays out the page at htmlPath in headless Chromium at
// 1280 CSS px wide, with the measuring script added to a copy (and the
// copy's CSP, which forbids scripts, removed), and returns what overflows.
func overflowProblems(t *testing.T, bin, htmlPath string) []string {
	t.Helper()
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	probe := filepath.Join(work, "probe.html")
	body := cspMetaRE.ReplaceAllString(string(page), "")
	body = strings.Replace(body, "</body>", overflowScript+"\n</body>", 1)
	if err := os.WriteFile(probe, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--disable-extensions", "--disable-default-apps",
		"--user-data-dir="+filepath.Join(work, "profile"),
		"--host-resolver-rules=MAP * ~NOTFOUND",
		fmt.Sprintf("--window-size=%d,2000", overflowWindowW),
		"--dump-dom",
		(&url.URL{Scheme: "file", Path: filepath.ToSlash(probe)}).String())
	cmd.Env = append(os.Environ(), "HOME="+work)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, tail(stderr.Bytes(), 2000))
	}
	m := overflowResRE.FindSubmatch(stdout.Bytes())
	if m == nil {
		t.Fatalf("the measuring script left no result; DOM dump %d bytes\n%s", stdout.Len(), tail(stderr.Bytes(), 2000))
	}
	var res struct {
		Width    int      `json:"width"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &res); err != nil {
		t.Fatalf("measuring script result: %v", err)
	}
	if res.Width != overflowWindowW {
		t.Fatalf("page laid out %d px wide, want %d", res.Width, overflowWindowW)
	}
	return res.Problems
}

// TestBrowserRender renders each kind of report in headless Chromium and
// checks that the page is drawn (not blank, plots visible) and that it
// asked the network for nothing. It skips when no Chromium is installed.
func TestBrowserRender(t *testing.T) {
	bin := findChromium()
	if bin == "" {
		t.Skip("no chromium, chromium-browser or google-chrome on PATH; install one (Debian: apt-get install -y chromium) to run the browser rendering test")
	}
	if testing.Short() {
		t.Skip("browser rendering test skipped in -short mode")
	}
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
			for _, p := range overflowProblems(t, bin, path) {
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
		got := overflowProblems(t, bin, path)
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
