package admin

import (
	"bytes"
	"testing"
)

func TestPrint(t *testing.T) {
	v := TopicList{{Name: "orders", ID: "x", Partitions: 12, Replicas: 3}, {Name: "a", Partitions: 1, Replicas: 1}}
	for _, tc := range []struct{ format, want string }{
		{"text", "NAME    PARTITIONS  REPLICAS\norders  12          3\na       1           1\n"},
		{"json", "[\n  {\n    \"name\": \"orders\",\n    \"id\": \"x\",\n    \"partitions\": 12,\n    \"replicas\": 3,\n    \"internal\": false\n  },\n  {\n    \"name\": \"a\",\n    \"id\": \"\",\n    \"partitions\": 1,\n    \"replicas\": 1,\n    \"internal\": false\n  }\n]\n"},
		{"yaml", "- name: orders\n  id: x\n  partitions: 12\n  replicas: 3\n  internal: false\n- name: a\n  id: \"\"\n  partitions: 1\n  replicas: 1\n  internal: false\n"},
	} {
		var b bytes.Buffer
		if err := Print(&b, tc.format, v); err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.format, b.String(), tc.want)
		}
	}
	if err := Print(&bytes.Buffer{}, "xml", v); err == nil {
		t.Error("xml: no error")
	}
}
