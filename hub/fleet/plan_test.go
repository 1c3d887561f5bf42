package fleet

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/rayfleet/rayfleet/hub/placement"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// groupSnapshot is a deep copy of what a group read, to tell whether anything changed it.
type groupSnapshot struct {
	hub            *rayv1.RayService
	binding        *fleetv1alpha1.RayServiceBinding
	policy         *fleetv1alpha1.PlacementPolicy
	memberClusters map[string]*fleetv1alpha1.MemberCluster
	copies         map[string]*rayv1.RayService
	refusals       map[string]fleetv1alpha1.ClusterRefusal
	route          routeRead
	history        []string
}

func snapshot(g *group) groupSnapshot {
	s := groupSnapshot{
		hub: g.hub.DeepCopy(), binding: g.binding.DeepCopy(), policy: g.policy.pp.DeepCopy(),
		memberClusters: map[string]*fleetv1alpha1.MemberCluster{}, copies: map[string]*rayv1.RayService{},
		refusals: maps.Clone(g.refusals), route: g.route,
	}
	s.route.state.Weights = maps.Clone(g.route.state.Weights)
	for name, mc := range g.memberClusters {
		s.memberClusters[name] = mc.DeepCopy()
	}
	for name, m := range g.members {
		s.copies[name] = m.copy.DeepCopy()
	}
	for _, cr := range g.history {
		s.history = append(s.history, cr.Name+"@"+cr.ResourceVersion)
	}
	return s
}

// checkUnchanged fails t when g is not as before was taken from it.
func checkUnchanged(t *testing.T, before groupSnapshot, g *group, after string) {
	t.Helper()
	if now := snapshot(g); !reflect.DeepEqual(before, now) {
		t.Errorf("%s changed the group:\nbefore %+v\nafter  %+v", after, before, now)
	}
}

// decideTwice decides g twice and checks that the two decisions are equal and that deciding
// left the group and the reservations as they were: the decision is a function of the group,
// and only the executor records the reservations it names.
func decideTwice(t *testing.T, r *Reconciler, g *group) *decision {
	t.Helper()
	before := snapshot(g)
	reservedBefore := reservedNow(r, g)
	d := r.decide(g)
	checkUnchanged(t, before, g, "deciding")
	again := r.decide(g)
	if !reflect.DeepEqual(d, again) {
		t.Errorf("a second decision of one group differs:\nfirst  %+v\nsecond %+v", d, again)
	}
	if after := reservedNow(r, g); !reflect.DeepEqual(reservedBefore, after) {
		t.Errorf("deciding changed the reservations:\nbefore %+v\nafter  %+v", reservedBefore, after)
	}
	return d
}

// reservedNow are r's reservations as g's RayService would read them at g.now.
func reservedNow(r *Reconciler, g *group) placement.Snapshot {
	return r.reserved.Snapshot(g.now, nil, g.key, placement.GreenKey(g.key))
}

// TestDecisionAssignedOnlyWhereAssembled reads the package's source and fails on any
// assignment to a field of a decision (a variable d or o.d) outside the literal decide and
// invalidDecision build: the decision is assembled once and never rewritten.
func TestDecisionAssignedOnlyWhereAssembled(t *testing.T) {
	fields := map[string]bool{}
	for f := range reflect.TypeFor[decision]().Fields() {
		fields[f.Name] = true
	}
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var lhs []ast.Expr
			switch s := n.(type) {
			case *ast.AssignStmt:
				lhs = s.Lhs
			case *ast.IncDecStmt:
				lhs = []ast.Expr{s.X}
			}
			for _, e := range lhs {
				if field, ok := decisionField(e); ok && fields[field] {
					t.Errorf("%s: the decision's %s is assigned after it was assembled", fset.Position(e.Pos()), field)
				}
			}
			return true
		})
	}
}

// decisionField is the field of d or o.d that e writes (through an index too), if any.
func decisionField(e ast.Expr) (string, bool) {
	for {
		ix, ok := e.(*ast.IndexExpr)
		if !ok {
			break
		}
		e = ix.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	switch x := sel.X.(type) {
	case *ast.Ident:
		return sel.Sel.Name, x.Name == "d"
	case *ast.SelectorExpr:
		return sel.Sel.Name, x.Sel.Name == "d"
	}
	return "", false
}
