package api

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/security/acl"
	"github.com/qk-project/qk/broker/security/scram"
)

// DescribeUserScramCredentials: v0
//
// Behavior:
// * Served by any broker, from the metadata store (/config/users/<user>)
//   rather than the cache, as Kafka's ZK-mode brokers read ZooKeeper, so
//   a describe right after an alter on the controller sees it
// * Only each credential's mechanism and iterations: never the salt or
//   the keys
// * Null or empty users: every user with a SCRAM credential, sorted;
//   otherwise the named users once each, in request order. A named user
//   without a credential, or an empty name, RESOURCE_NOT_FOUND; a name
//   given twice DUPLICATE_RESOURCE
// * A store failure is the top-level error
//
// Version notes:
// * v0: flexible

func (h *Handler) handleDescribeUserScramCredentials(c *call) {
	req := c.req.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	ctx, cancel := c.ctx(0)
	defer cancel()
	var results []kmsg.DescribeUserSCRAMCredentialsResponseResult
	err := c.clusterAuthorized(acl.Describe)
	if err == nil {
		results, err = h.describeScram(ctx, req.Users)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
	} else {
		resp.Results = results
	}
	c.respond(resp)
}

func (h *Handler) describeScram(ctx context.Context, users []kmsg.DescribeUserSCRAMCredentialsRequestUser) ([]kmsg.DescribeUserSCRAMCredentialsResponseResult, error) {
	var out []kmsg.DescribeUserSCRAMCredentialsResponseResult
	if len(users) == 0 {
		names, _, err := h.cfg.Store.Children(ctx, "/config/"+metadata.ConfigUsers)
		if err != nil && !errors.Is(err, metadata.ErrNoNode) {
			return nil, err
		}
		var all []string
		for _, n := range names {
			if u, err := scram.Desanitize(n); err == nil {
				all = append(all, u)
			}
		}
		slices.Sort(all)
		for _, u := range all {
			r, found, err := h.describeUser(ctx, u)
			if err != nil {
				return nil, err
			}
			if found {
				out = append(out, r)
			}
		}
		return out, nil
	}
	count := map[string]int{}
	for _, u := range users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range users {
		if done[u.Name] {
			continue
		}
		done[u.Name] = true
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u.Name
		switch {
		case u.Name == "":
			r.ErrorCode, r.ErrorMessage = kerr.ResourceNotFound.Code, ptrString("Username must not be empty")
		case count[u.Name] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = ptrString("Cannot describe SCRAM credentials for the same user twice in a single request: " + u.Name)
		default:
			got, found, err := h.describeUser(ctx, u.Name)
			switch {
			case err != nil:
				r.ErrorCode, r.ErrorMessage = errorCode(err), errorMessage(err)
			case !found:
				r.ErrorCode = kerr.ResourceNotFound.Code
				r.ErrorMessage = ptrString("Attempt to describe a user credential that does not exist: " + u.Name)
			default:
				r = got
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// describeUser reads one user's credentials; found is false when the
// user has none.
func (h *Handler) describeUser(ctx context.Context, user string) (kmsg.DescribeUserSCRAMCredentialsResponseResult, bool, error) {
	r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
	r.User = user
	cfg, err := metadata.ReadEntityConfig(ctx, h.cfg.Store, metadata.ConfigUsers, scram.Sanitize(user))
	if err != nil {
		return r, false, err
	}
	found := false
	for _, m := range scram.Mechanisms {
		v, ok := cfg[m.String()]
		if !ok {
			continue
		}
		found = true
		cred, err := scram.Parse(v)
		if err != nil {
			// Kafka answers bad stored data with the error of its parse
			// (an IllegalArgumentException: UNKNOWN_SERVER_ERROR).
			r.ErrorCode = kerr.UnknownServerError.Code
			r.ErrorMessage = ptrString("Error processing describe user SCRAM credential configs request")
			r.CredentialInfos = nil
			return r, true, nil
		}
		ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		ci.Mechanism, ci.Iterations = int8(m), int32(cred.Iterations)
		r.CredentialInfos = append(r.CredentialInfos, ci)
	}
	return r, found, nil
}

func ptrString(s string) *string { return &s }
