package clientquota

import (
	"sync"
	"sync/atomic"
	"time"
)

// InactiveSensorExpiration is how long a sensor lives without a record
// (ClientQuotaManager.InactiveSensorExpirationTimeSeconds).
const InactiveSensorExpiration = time.Hour

// Config configures a Manager.
type Config struct {
	Type   Type
	Window Window // zero: DefaultWindowConfig
	// MaxThrottle caps throttle times; zero is no cap. Kafka caps request
	// quotas at one window (see ForType) and byte rates not at all.
	MaxThrottle time.Duration
	// Expiration drops a sensor idle this long; zero is
	// InactiveSensorExpiration.
	Expiration time.Duration
}

// ForType is Kafka's configuration of a quota type's manager: the
// default window, and a cap of one window for request quotas.
func ForType(t Type) Config {
	c := Config{Type: t, Window: DefaultWindowConfig}
	if t == Request {
		c.MaxThrottle = DefaultWindow
	}
	return c
}

// Manager is one quota type's ClientQuotaManager: the current quotas and
// a sensor (a Rate with its bound) per SensorKey. It is safe for
// concurrent use (handlers record from many goroutines); the math is in
// Rate and ThrottleTime.
type Manager struct {
	cfg Config

	// on mirrors enabled, for Enabled and the unlimited path of the
	// record methods: no lock while no quota of the type is set.
	on atomic.Bool

	mu        sync.Mutex // guards what follows; innermost
	quotas    Quotas
	enabled   bool
	sensors   map[SensorKey]*sensor
	lastSweep time.Time
}

type sensor struct {
	rate Rate
	last time.Time // last record
}

// New returns a Manager with no quotas.
func New(cfg Config) *Manager {
	cfg.Window = cfg.Window.orDefault()
	if cfg.Expiration <= 0 {
		cfg.Expiration = InactiveSensorExpiration
	}
	return &Manager{cfg: cfg, sensors: map[SensorKey]*sensor{}}
}

// Update replaces the quotas (a config change). Sensors are kept: a pair
// whose sensor key is unchanged keeps its history under the new bound,
// as Kafka's updateQuotaMetricConfigs; one whose key changed starts a new
// sensor, and the old one expires.
func (m *Manager) Update(q Quotas) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.quotas = q
	m.enabled = q.Has(m.cfg.Type)
	m.on.Store(m.enabled)
}

// Enabled reports whether any entity sets a quota of the manager's type
// (Kafka's quotasEnabled); without one every pair is unlimited. It takes
// no lock, for the request path to skip the quota work.
func (m *Manager) Enabled() bool { return m.on.Load() }

// Limit returns the quota that applies to (user, clientID) and the
// sensor it records into; ok is false when the pair is unlimited.
func (m *Manager) Limit(user, clientID string) (Match, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.enabled {
		return Match{}, false
	}
	return m.quotas.Resolve(m.cfg.Type, user, clientID)
}

// RecordAndGetThrottle records value (bytes produced or fetched, or a
// PercentOfThread of handler time) for (user, clientID) at now and
// returns how long the client must be throttled: zero while its sensor's
// rate, this value included, is within the quota
// (recordAndGetThrottleTimeMs). An unlimited pair records nothing.
func (m *Manager) RecordAndGetThrottle(user, clientID string, value float64, now time.Time) time.Duration {
	if !m.on.Load() {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	if !m.enabled {
		return 0
	}
	match, ok := m.quotas.Resolve(m.cfg.Type, user, clientID)
	if !ok {
		return 0
	}
	s := m.sensors[match.Sensor]
	if s == nil {
		s = &sensor{}
		m.sensors[match.Sensor] = s
	}
	s.last = now
	s.rate.Record(m.cfg.Window, value, now)
	observed := s.rate.Measure(m.cfg.Window, now)
	if observed <= match.Limit {
		return 0
	}
	return ThrottleTime(observed, match.Limit, s.rate.WindowSize(m.cfg.Window, now), m.cfg.MaxThrottle)
}

// Unrecord takes value back out of the sensor of (user, clientID), with
// no quota check (ClientQuotaManager.unrecordQuotaSensor): a fetch that
// was throttled returns no records, so the bytes it would have sent are
// not charged. A pair that is unlimited, or has no sensor, is left alone.
func (m *Manager) Unrecord(user, clientID string, value float64, now time.Time) {
	if !m.on.Load() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	match, ok := m.quotas.Resolve(m.cfg.Type, user, clientID)
	if !ok {
		return
	}
	if s := m.sensors[match.Sensor]; s != nil {
		s.rate.Record(m.cfg.Window, -value, now)
	}
}

// Rate returns the current rate of a sensor, and whether it exists.
func (m *Manager) Rate(key SensorKey, now time.Time) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensors[key]
	if s == nil || now.Sub(s.last) >= m.cfg.Expiration {
		return 0, false
	}
	return s.rate.Measure(m.cfg.Window, now), true
}

// Sensors is the number of live sensors.
func (m *Manager) Sensors() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sensors)
}

// sweep drops the sensors idle for the expiration, at most once per
// window; m.mu is held.
func (m *Manager) sweep(now time.Time) {
	if now.Sub(m.lastSweep) < m.cfg.Window.Size {
		return
	}
	m.lastSweep = now
	for k, s := range m.sensors {
		if now.Sub(s.last) >= m.cfg.Expiration {
			delete(m.sensors, k)
		}
	}
}

// Managers are a broker's quota managers, one per type (Kafka's
// QuotaManagers: produce, fetch, request, controller mutation), updated
// together when the quotas change.
type Managers struct {
	byType [len(typeNames)]*Manager
}

// NewManagers returns one Manager per type, configured as Kafka's
// (ForType) with window w (zero: DefaultWindowConfig).
func NewManagers(w Window) *Managers {
	ms := &Managers{}
	for _, t := range typeNames {
		cfg := ForType(t)
		if w != (Window{}) {
			cfg.Window = w
		}
		if t == Request {
			cfg.MaxThrottle = cfg.Window.orDefault().Size
		}
		ms.byType[t] = New(cfg)
	}
	return ms
}

// Get returns the manager of type t.
func (ms *Managers) Get(t Type) *Manager { return ms.byType[t] }

// Update gives every manager the new quotas (from the metadata cache's
// change hook).
func (ms *Managers) Update(q Quotas) {
	for _, m := range ms.byType {
		m.Update(q)
	}
}
