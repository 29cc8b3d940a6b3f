package model

import "testing"

// TestAdapterGenFollowsTheCatalog: the adapter of k ports takes the
// generation of the catalog row that carries k times the port speed.
func TestAdapterGenFollowsTheCatalog(t *testing.T) {
	for _, c := range []struct {
		speed string
		k     int
		want  int
	}{
		{"100G", 1, 3}, {"100G", 2, 4}, {"100G", 4, 5}, {"200G", 2, 5}, {"400G", 2, 6}, {"400G", 4, 6},
	} {
		s, err := LookupNICSpeed(c.speed, NICRoCE)
		if err != nil {
			t.Fatal(err)
		}
		if got := adapterGen(s, c.k); got != c.want {
			t.Errorf("%d x %s: Gen%d, want Gen%d", c.k, c.speed, got, c.want)
		}
	}
}
