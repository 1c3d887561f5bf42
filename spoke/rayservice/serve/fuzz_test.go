package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// parseDeadline is how long building one submission body may take. The slowest config the
// validation lets through takes tenths of a second; a parse taking longer is unbounded.
const parseDeadline = 5 * time.Second

// FuzzConfigJSON parses arbitrary serveConfigV2 text as the reconciler does before submitting
// it. Whatever the input: no panic, the same body twice, an answer within parseDeadline, a
// config over the size limit refused unparsed; a body that is built is a JSON object carrying
// the target capacity asked for; and a config the validation accepts (as the hub and the spoke
// do before anything is submitted) always gives a body, whose applications NeedsSubmit sees.
func FuzzConfigJSON(f *testing.F) {
	laughs := "a0: &a0 [lol]\n"
	for i := 1; i <= 9; i++ {
		laughs += fmt.Sprintf("a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 10), ","))
	}
	for _, seed := range []string{
		raybuilder.RayServiceServeConfig,
		"",
		"applications: []\n",
		"applications:\n  - name: a\n   route_prefix: /a\n",
		"http_options:\n  port: 8000\n  request_timeout_s: 9007199254740993\n",
		`{"applications": [{"name": "a", "import_path": "m.app"}], "target_capacity": 50}`,
		"- a\n- b\n",
		"applications: fruit\n",
		"a: &a {b: *a}\n",
		laughs,
		laughs + "applications: [*a9]\n",
		"applications: [" + strings.Repeat("x,", validation.MaxServeConfigV2Bytes/2) + "]\n",
	} {
		f.Add(seed, int32(-1))
		f.Add(seed, int32(50))
	}
	base := raybuilder.MakeRayService("svc", "ns").Obj()
	f.Fuzz(func(t *testing.T, config string, capacity int32) {
		var target *int32
		if capacity >= 0 {
			target = &capacity
		}
		start := time.Now()
		body, err := ConfigJSON(config, target)
		if took := time.Since(start); took > parseDeadline {
			t.Fatalf("ConfigJSON took %v", took)
		}
		again, againErr := ConfigJSON(config, target)
		if (err == nil) != (againErr == nil) || !bytes.Equal(body, again) {
			t.Fatalf("ConfigJSON is not deterministic: (%s, %v), then (%s, %v)", body, err, again, againErr)
		}
		if len(config) > validation.MaxServeConfigV2Bytes && err == nil {
			t.Fatalf("a %d-byte config was parsed", len(config))
		}
		rs := base.DeepCopy()
		rs.Spec.ServeConfigV2 = config
		if validation.RayServiceSpec(rs) == nil && err != nil {
			t.Fatalf("validation accepts the config, but no body can be built from it: %v", err)
		}
		if err != nil {
			return
		}
		checkBody(t, config, body, target)
	})
}

// checkBody checks a submission body: a JSON object with the target capacity asked for, whose
// applications NeedsSubmit counts as declared.
func checkBody(t *testing.T, config string, body []byte, target *int32) {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil || doc == nil {
		t.Fatalf("the body %q is not a JSON object: %v", body, err)
	}
	if target != nil && string(doc[targetCapacityKey]) != fmt.Sprint(*target) {
		t.Fatalf("target_capacity is %s, want %d", doc[targetCapacityKey], *target)
	}
	var apps []json.RawMessage
	if json.Unmarshal(doc["applications"], &apps) == nil && len(apps) > 0 && !declaresApplications(config) {
		t.Fatalf("the body has %d applications, but NeedsSubmit sees none declared", len(apps))
	}
}
