package broker

import (
	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/security/acl"
)

// newAuthorizer is Kafka's AclAuthorizer settings when
// authorizer.class.name names it, nil (no authorizer) otherwise.
func (s *Server) newAuthorizer(cfg *config.Broker) *acl.Authorizer {
	if !s.authorizer {
		return nil
	}
	a := &acl.Authorizer{SuperUsers: map[string]bool{}, AllowEveryoneIfNoACLFound: cfg.AllowEveryoneIfNoACLFound}
	for _, u := range cfg.SuperUsers {
		a.SuperUsers[u] = true
	}
	return a
}

// MetadataStore is the broker's metadata store session, for tests that
// check the nodes the broker wrote.
func (s *Server) MetadataStore() metadata.Store { return s.store }
