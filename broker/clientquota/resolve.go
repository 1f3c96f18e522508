package clientquota

import (
	"maps"
	"slices"
)

// Quotas are the quota entities of a cluster with their values: what
// /config/users and /config/clients hold. Never modify one that has been
// shared (a cache snapshot, a Manager): build a new one.
type Quotas map[Entity]Values

// SensorKey names the sensor a (user, client-id) pair records into: the
// user and client-id metric tags of Kafka's quota metrics, "" for a tag
// the matched level leaves out.
type SensorKey struct {
	User, Client string
}

// Match is the outcome of resolving a (user, client-id) pair for one
// quota type.
type Match struct {
	Entity Entity    // the entity whose value applies
	Limit  float64   // its value
	Sensor SensorKey // the sensor to record into
}

// Resolve finds the quota of type t for a connection of user (the
// principal's name) and clientID, in Kafka's order (see the package
// documentation). ok is false when no entity sets t: the pair is
// unlimited.
func (q Quotas) Resolve(t Type, user, clientID string) (m Match, ok bool) {
	key := t.Key()
	u, c := Named(user), Named(clientID)
	levels := [...]struct {
		e      Entity
		sensor SensorKey
	}{
		{Entity{User: u, Client: c}, SensorKey{user, clientID}},
		{Entity{User: u, Client: Default}, SensorKey{user, clientID}},
		{Entity{User: u}, SensorKey{user, ""}},
		{Entity{User: Default, Client: c}, SensorKey{user, clientID}},
		{Entity{User: Default, Client: Default}, SensorKey{user, clientID}},
		{Entity{User: Default}, SensorKey{user, ""}},
		{Entity{Client: c}, SensorKey{"", clientID}},
		{Entity{Client: Default}, SensorKey{"", clientID}},
	}
	for _, l := range levels {
		if v, found := q[l.e][key]; found {
			return Match{Entity: l.e, Limit: v, Sensor: l.sensor}, true
		}
	}
	return Match{}, false
}

// Has reports whether any entity sets a quota of type t (Kafka's
// quotasEnabled for the type's manager).
func (q Quotas) Has(t Type) bool {
	key := t.Key()
	for _, v := range q {
		if _, ok := v[key]; ok {
			return true
		}
	}
	return false
}

// Entities returns the entities in Compare order.
func (q Quotas) Entities() []Entity {
	return slices.SortedFunc(maps.Keys(q), Compare)
}

// Equal reports whether q and o hold the same entities and values.
func (q Quotas) Equal(o Quotas) bool {
	return maps.EqualFunc(q, o, func(a, b Values) bool { return maps.Equal(a, b) })
}

// Filter is a DescribeClientQuotas filter component for one part: absent
// (nil Filter), any name (SPECIFIED), the default (DEFAULT) or one name
// (EXACT).
type Filter struct {
	// Any matches every present part (MATCH_TYPE_SPECIFIED).
	Any bool
	// Part is the part to match exactly (EXACT: a name; DEFAULT: Default)
	// unless Any.
	Part Part
}

func (f *Filter) matches(p Part, strict bool) bool {
	switch {
	case f == nil:
		return !p.Present() || !strict
	case f.Any:
		return p.Present()
	}
	return p == f.Part
}

// Describe returns the entities matched by a DescribeClientQuotas
// request's filters, in Compare order, as Kafka's ZK-mode
// describeClientQuotas: user and client are the filters for the two
// parts (nil when the request has no component for it); with strict an
// entity must not have a part the request has no component for.
func (q Quotas) Describe(user, client *Filter, strict bool) []Entity {
	var out []Entity
	for _, e := range q.Entities() {
		if len(q[e]) == 0 {
			continue
		}
		if user.matches(e.User, strict) && client.matches(e.Client, strict) {
			out = append(out, e)
		}
	}
	return out
}
