package bundled_test

import (
	"encoding/json"
	"testing"

	"github.com/webserv-rl/webserv/sites/bundled"
)

// Every server start gives the bundled sites a new EVAL_TOKEN, but the
// same definition: the token is a secret of the instances, not part of
// what an Incus base is built and named from, so a new start reuses the
// base the last one built instead of building one more and leaving the
// last behind.
func TestEveryStartDefinesTheSameSites(t *testing.T) {
	var defs [2][]byte
	var tokens [2]string
	for i := range defs {
		shop, err := bundled.Sites(t.Context(), bundled.Options{IncusImage: "webserv-shop"})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range shop.Sites {
			if s.Secrets["EVAL_TOKEN"] != shop.EvalToken || s.Env["EVAL_TOKEN"] != "" {
				t.Errorf("site %s: env %v, secrets %v; want the token %s among the secrets only", s.Name, s.Env, s.Secrets, shop.EvalToken)
			}
		}
		if defs[i], err = json.Marshal(shop.Sites); err != nil {
			t.Fatal(err)
		}
		tokens[i] = shop.EvalToken
	}
	if tokens[0] == tokens[1] {
		t.Errorf("two starts had the same token %s", tokens[0])
	}
	if string(defs[0]) != string(defs[1]) {
		t.Errorf("two starts defined the sites differently:\n%s\n%s", defs[0], defs[1])
	}
}
