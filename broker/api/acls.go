package api

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/security/acl"
)

// securityDisabledMessage is what the ACL APIs answer without an authorizer,
// with SECURITY_DISABLED, as Kafka does.
const securityDisabledMessage = "No Authorizer is configured on the broker"

// aclError is the code and message of an ACL API error: an
// acl.InvalidError is INVALID_REQUEST with Kafka's message, anything
// else goes through errorCode.
func aclError(err error) (int16, *string) {
	var ie *acl.InvalidError
	if errors.As(err, &ie) {
		return kerr.InvalidRequest.Code, ptrString(ie.Msg)
	}
	return errorCode(err), errorMessage(err)
}

// aclWriteRefused is the error every result of a CreateAcls or
// DeleteAcls gets before any work is done: SECURITY_DISABLED without an
// authorizer, CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster
// (0 when the request may proceed).
func (c *call) aclWriteRefused() (int16, *string) {
	if c.h.cfg.Authorizer == nil {
		return kerr.SecurityDisabled.Code, ptrString(securityDisabledMessage)
	}
	if err := c.clusterAuthorized(acl.Alter); err != nil {
		return errorCode(err), errorMessage(err)
	}
	return 0, nil
}
