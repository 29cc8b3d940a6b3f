// Package browsertest lays HTML reports out in headless Chromium for the
// tests of the packages that write them: it finds the browser, runs it
// with every network path shut, and measures what overflows its box.
// Tests only.
package browsertest

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

// find returns the path of a Chromium-family browser on PATH, or "".
func find() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Require returns the browser for the test named what ("browser layout"),
// skipping the test when there is none on PATH or in -short mode.
func Require(t testing.TB, what string) string {
	t.Helper()
	bin := find()
	if bin == "" {
		t.Skipf("no chromium, chromium-browser or google-chrome on PATH; install one (Debian: apt-get install -y chromium) to run the %s test", what)
	}
	if testing.Short() {
		t.Skipf("%s test skipped in -short mode", what)
	}
	return bin
}

// Command returns a headless run of bin on the file at page with its
// profile and HOME in work, background networking off, every host name
// unresolvable, and args added; it is killed after 45 s. The caller must
// call the returned cancel once the command is done.
func Command(bin, work, page string, args ...string) (*exec.Cmd, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	flags := []string{
		"--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--disable-extensions", "--disable-default-apps",
		"--user-data-dir=" + filepath.Join(work, "profile"),
		"--host-resolver-rules=MAP * ~NOTFOUND",
	}
	flags = append(flags, args...)
	flags = append(flags, (&url.URL{Scheme: "file", Path: filepath.ToSlash(page)}).String())
	cmd := exec.CommandContext(ctx, bin, flags...)
	cmd.Env = append(os.Environ(), "HOME="+work)
	cmd.WaitDelay = 5 * time.Second
	return cmd, cancel
}

// Tail returns the last n bytes of b (all of it when shorter).
func Tail(b []byte, n int) []byte {
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
	cspMetaRE     = regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`)
	overflowResRE = regexp.MustCompile(`(?s)<pre id="overflow-result">(.*?)</pre>`)
)

// overflowWindowW is the window width the layout is measured at, in CSS px.
const overflowWindowW = 1280

// OverflowProblems lays out the page at htmlPath in headless Chromium at
// 1280 CSS px wide, with the measuring script added to a copy (and the
// copy's CSP, which forbids scripts, removed), and returns what overflows.
func OverflowProblems(t testing.TB, bin, htmlPath string) []string {
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
	cmd, cancel := Command(bin, work, probe, "--hide-scrollbars", fmt.Sprintf("--window-size=%d,2000", overflowWindowW), "--dump-dom")
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, Tail(stderr.Bytes(), 2000))
	}
	m := overflowResRE.FindSubmatch(stdout.Bytes())
	if m == nil {
		t.Fatalf("the measuring script left no result; DOM dump %d bytes\n%s", stdout.Len(), Tail(stderr.Bytes(), 2000))
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
