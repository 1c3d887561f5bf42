// Package docs checks the repository's Markdown: every relative link names a file or directory
// inside the repository, and every #anchor a heading of the file it points into. It has tests
// only and no build tag, so `make test` runs it.
package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, from this package's directory.
var root = filepath.Join("..", "..")

// skipDirs hold no documentation of ours: build output, tool caches, copied upstream files.
var skipDirs = map[string]bool{".git": true, "bin": true, "testdata": true}

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

func TestRelativeLinksResolve(t *testing.T) {
	files := markdownFiles(t)
	if len(files) < 5 {
		t.Fatalf("found %d Markdown files under %s; is root right?", len(files), root)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = headingAnchors(data)
		return anchors[path]
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for _, l := range links(data) {
			checked++
			if err := checkLink(absRoot, file, l.target, anchorsOf); err != nil {
				t.Errorf("%s:%d: link %q: %v", rel, l.line, l.target, err)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no links found")
	}
}

func checkLink(absRoot, file, target string, anchorsOf func(string) map[string]bool) error {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return nil
	}
	path, anchor, _ := strings.Cut(target, "#")
	if strings.HasPrefix(path, "/") {
		return fmt.Errorf("an absolute path: link relative to the file")
	}
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
	}
	abs, err := filepath.Abs(dest)
	if err != nil {
		return err
	}
	if abs != absRoot && !strings.HasPrefix(abs, absRoot+string(filepath.Separator)) {
		return fmt.Errorf("points outside the repository")
	}
	info, err := os.Stat(dest)
	if err != nil {
		return fmt.Errorf("no such file or directory")
	}
	if anchor == "" {
		return nil
	}
	if info.IsDir() || !strings.HasSuffix(dest, ".md") {
		return fmt.Errorf("an anchor into something that is not a Markdown file")
	}
	if !anchorsOf(dest)[anchor] {
		return fmt.Errorf("no heading with anchor #%s in %s", anchor, filepath.Base(dest))
	}
	return nil
}

func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

type link struct {
	line   int
	target string
}

// links returns the link targets of a Markdown text, outside fenced code blocks and inline code.
func links(data []byte) []link {
	var out []link
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(inlineCodeRE.ReplaceAllString(line, ""), -1) {
			out = append(out, link{line: n, target: m[1]})
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives a Markdown text's headings: lower case,
// punctuation dropped, spaces as hyphens, a repeated one suffixed -1, -2, ...
func headingAnchors(data []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		m := headingRE.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

func slug(heading string) string {
	// A link in a heading keeps its text only.
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Blue/green across clusters":                 "bluegreen-across-clusters",
		"Rollouts: `rayfleet rollout`":               "rollouts-rayfleet-rollout",
		"The hub's identity (`hubAccess`)":           "the-hubs-identity-hubaccess",
		"The spoke and KubeRay v1.6.2":               "the-spoke-and-kuberay-v162",
		"A RayService is not placed (Unschedulable)": "a-rayservice-is-not-placed-unschedulable",
		"Faults (`make chaos`)":                      "faults-make-chaos",
		"See [the API](api.md)":                      "see-the-api",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestHeadingAnchorsRepeat(t *testing.T) {
	got := headingAnchors([]byte("# A\n\n## Metrics\n\n```\n# not a heading\n```\n\n## Metrics\n"))
	for _, want := range []string{"a", "metrics", "metrics-1"} {
		if !got[want] {
			t.Errorf("anchors %v lack %q", got, want)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line in a code block was taken for a heading")
	}
}
