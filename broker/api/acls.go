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
