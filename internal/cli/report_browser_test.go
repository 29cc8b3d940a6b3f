package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// This file renders the HTML report of every command in headless Chromium
// and checks, with the page's own layout, that no text overflows its box.
// The measuring code is the one of the reports package's browser test.

// findChromium returns the path of a Chromium-family browser on PATH, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

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

// TestReportBrowserLayout writes the HTML report of every command and
// lays each out in headless Chromium at 1280 px: nothing may overflow its
// box. It skips without Chromium and in -short mode.
func TestReportBrowserLayout(t *testing.T) {
	bin := findChromium()
	if bin == "" {
		t.Skip("no chromium, chromium-browser or google-chrome on PATH; install one (Debian: apt-get install -y chromium) to run the layout test")
	}
	if testing.Short() {
		t.Skip("browser layout test skipped in -short mode")
	}
	moc := corpus + "/nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt"
	snellius := []string{corpus + "/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt", corpus + "/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt"}
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"predict", []string{"predict", "--engine", "analytic", "-b", "8", "-e", "1G", "-f", "2"}, ExitOK},
		{"compare", compareArgs, ExitOK},
		{"scale", []string{"scale", "--node", "dgx-h100", "--nics", "4x400G-roce", "--max-nodes", "8"}, ExitOK},
		{"scale-workload", []string{"scale", "--node", "dgx-a100", "--nodes-list", "2,4", "--params", "1B", "--compute-ms", "100", "--strategy", "fsdp"}, ExitOK},
		{"sweep", []string{"sweep", "testdata/sweep/fabric.yaml"}, ExitOK},
		{"validate", []string{"validate", "--node", "dgx-h100", "--gpus-per-node", "1", "--nodes", "2", "--nics", "1x400G-roce", "--measured", moc}, ExitFailed},
		{"calibrate", []string{"calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", snellius[0], "--measured", snellius[1]}, ExitOK},
		{"accuracy", []string{"accuracy", "--cases", "../../ingest/testdata/cases.yaml", "--only", "moc_,bcm_"}, ExitOK},
		{"inspect", []string{"inspect", corpus + "/p2pbw_a100sxm80_1x8_nvswitch_distserve3.txt", moc, snellius[1]}, ExitOK},
		{"hwbench", []string{"hwbench", "--fake", "-q", "--maxbytes", "64K", "--copybytes", "1M", "--iters", "2", "--warmup", "1"}, ExitOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "r.html")
			args := append([]string{}, tc.args...)
			if tc.name == "hwbench" {
				args = append(args, "--out", filepath.Join(dir, "hw.json"))
			}
			if code, _, stderr := runAt(t, append(args, "--report", out)...); code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			for _, p := range overflowProblems(t, bin, out) {
				t.Errorf("overflows its box: %s", p)
			}
		})
	}
}
