package server

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/webserv-rl/webserv/envcore"
)

// extra_element_properties asked for is on the wire even when the page has
// no ids (BrowserGym always gives the key: AgentLab's obs_preprocessor
// reads it), on MessagePack and OpenEnv's JSON; not asked for, it is left
// out of both.
func TestExtraElementPropertiesKeyWhenAskedForEvenEmpty(t *testing.T) {
	for _, c := range []struct {
		name  string
		props envcore.ElementPropertiesByID
		want  bool
	}{{"asked, empty", envcore.ElementPropertiesByID{}, true}, {"not asked", nil, false}} {
		obs := Observation{Observation: envcore.Observation{URL: "http://x/", ExtraElementProperties: c.props}}
		b, err := encodeReply(&Reply{ID: 1, OK: true, Result: obs})
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Result map[string]any `msgpack:"result"`
		}
		if err := msgpack.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		v, ok := r.Result["extra_element_properties"]
		if ok != c.want || ok && len(v.(map[string]any)) != 0 {
			t.Errorf("%s: MessagePack has extra_element_properties %v (%v); want present %v", c.name, ok, v, c.want)
		}
		if _, ok := openEnvObs(obs, StepInfo{})["extra_element_properties"]; ok != c.want {
			t.Errorf("%s: OpenEnv's observation has extra_element_properties %v; want %v", c.name, ok, c.want)
		}
	}
}
