package broker

import "github.com/qk-project/qk/broker/metadata"

// WithAuthorizer turns ACLs on, as authorizer.class.name does in Kafka:
// the broker creates the /kafka-acl* nodes at start and serves
// CreateAcls, DescribeAcls and DeleteAcls (SECURITY_DISABLED without
// it). Every broker's metadata cache follows the ACLs either way
// (Snapshot.ACLs).
func WithAuthorizer(enabled bool) Option { return func(o *options) { o.authorizer = enabled } }

// MetadataStore is the broker's metadata store session, for tests that
// check the nodes the broker wrote.
func (s *Server) MetadataStore() metadata.Store { return s.store }
