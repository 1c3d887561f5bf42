package fleet

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// planTypes are the values a plan is made of: this package's decision and the parts it is
// assembled from, and what the feature packages return. Each is built in one composite literal
// by the function that decides it; nothing assigns to its fields afterwards, here or in the
// executor.
var planTypes = []string{
	"github.com/rayfleet/rayfleet/hub/fleet.decision",
	"github.com/rayfleet/rayfleet/hub/fleet.placementResult",
	"github.com/rayfleet/rayfleet/hub/fleet.rolloutResult",
	"github.com/rayfleet/rayfleet/hub/fleet.rolloutDecision",
	"github.com/rayfleet/rayfleet/hub/fleet.trafficDecision",
	"github.com/rayfleet/rayfleet/hub/placement.Decision",
	"github.com/rayfleet/rayfleet/hub/placement.Colors",
	"github.com/rayfleet/rayfleet/hub/placement.Intent",
	"github.com/rayfleet/rayfleet/hub/rollout.Decision",
	"github.com/rayfleet/rayfleet/hub/traffic.Plan",
	"github.com/rayfleet/rayfleet/hub/propagation.Action",
	"github.com/rayfleet/rayfleet/hub/leaving.Entry",
	"github.com/rayfleet/rayfleet/hub/leaving.Result",
}

// TestPlanFieldsAssignedOnlyWhereDecided type-checks the package's source and fails on any
// assignment to a field of a plan type (planTypes) outside the package that declares it, and,
// for this package's own plan types, anywhere at all: a plan is assembled once and never
// rewritten, neither by the step after the one that decided it nor by the executor.
func TestPlanFieldsAssignedOnlyWhereDecided(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: exportImporter(t, fset)}
	pkg, err := conf.Check("github.com/rayfleet/rayfleet/hub/fleet", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	plan := map[string]bool{}
	for _, n := range planTypes {
		plan[n] = true
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			var lhs []ast.Expr
			switch s := n.(type) {
			case *ast.AssignStmt:
				lhs = s.Lhs
			case *ast.IncDecStmt:
				lhs = []ast.Expr{s.X}
			}
			for _, e := range lhs {
				owner, field, ok := assignedField(info, e)
				if !ok || !plan[owner] {
					continue
				}
				t.Errorf("%s: %s.%s is assigned after the plan decided it", fset.Position(e.Pos()), owner, field)
			}
			return true
		})
	}
	// Every listed type is one the package uses: a renamed type must not leave the test
	// checking nothing.
	for _, n := range planTypes {
		dot := strings.LastIndex(n, ".")
		if !usesType(pkg, n[:dot], n[dot+1:]) {
			t.Errorf("%s is listed as a plan type, but the package does not use it", n)
		}
	}
}

// assignedField is the struct type (as import path "." name) and the field that e writes,
// through any index or dereference, when e writes a field.
func assignedField(info *types.Info, e ast.Expr) (owner, field string, ok bool) {
	for {
		switch x := e.(type) {
		case *ast.IndexExpr:
			e = x.X
			continue
		case *ast.StarExpr:
			e = x.X
			continue
		case *ast.ParenExpr:
			e = x.X
			continue
		}
		break
	}
	sel, isSel := e.(*ast.SelectorExpr)
	if !isSel {
		return "", "", false
	}
	s := info.Selections[sel]
	if s == nil || s.Kind() != types.FieldVal {
		return "", "", false
	}
	recv := s.Recv()
	if p, isPtr := recv.(*types.Pointer); isPtr {
		recv = p.Elem()
	}
	named, isNamed := recv.(*types.Named)
	if !isNamed || named.Obj().Pkg() == nil {
		return "", "", false
	}
	return named.Obj().Pkg().Path() + "." + named.Obj().Name(), sel.Sel.Name, true
}

// usesType reports whether pkg declares, or imports a package that declares, the type name
// of the package at path.
func usesType(pkg *types.Package, path, name string) bool {
	if pkg.Path() == path {
		return pkg.Scope().Lookup(name) != nil
	}
	for _, imp := range pkg.Imports() {
		if imp.Path() == path {
			return imp.Scope().Lookup(name) != nil
		}
	}
	return false
}

// exportImporter imports packages from the export data `go list -export` builds for this
// package's dependencies: type-checking them from source would take minutes.
func exportImporter(t *testing.T, fset *token.FileSet) types.Importer {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{if .Export}}{{.ImportPath}} {{.Export}}{{end}}", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v: %s", err, stderr.String())
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), " "); ok {
			exports[path] = file
		}
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, os.ErrNotExist
		}
		return os.Open(file)
	})
}
