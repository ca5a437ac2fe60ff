package realserver

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// OAuth2 is a Trino coordinator's OAuth2 authentication (Options.OAuth2):
// the identity provider, found by OpenID Connect discovery at its issuer,
// and the client it registered for the coordinator. Trino then answers a
// statement without a token 401 with the external authentication
// challenge (WWW-Authenticate: Bearer x_redirect_server=..., x_token_server=...)
// and serves /oauth2/callback, the redirect URI the identity provider
// sends the browser back to, on its https port.
type OAuth2 struct {
	// Issuer is the identity provider's issuer URL; Trino reads
	// Issuer/.well-known/openid-configuration for the authorization, token
	// and JWKS URLs and checks that the document names this issuer.
	Issuer string
	// ClientID and ClientSecret are the coordinator's client at the
	// identity provider; Trino sends them to the token endpoint by HTTP
	// basic authentication (client_secret_basic).
	ClientID, ClientSecret string
	// Scopes, default "openid": with openid, Trino asks for an ID token
	// and checks its nonce.
	Scopes []string
	// PrincipalField is the claim of the access token that names the
	// user, default "sub".
	PrincipalField string
}

// checkOAuth2 refuses an Options.OAuth2 the kit cannot start.
func checkOAuth2(opts Options) error {
	o := opts.OAuth2
	if o == nil {
		return nil
	}
	if opts.Flavour != coordinator.Trino {
		return fmt.Errorf("realserver: %s: OAuth2 is Trino's only (PrestoDB 0.287 has no OAuth2 authenticator)", opts.Name)
	}
	if opts.HTTPSKeyStore == "" {
		return fmt.Errorf("realserver: %s: OAuth2 needs HTTPSKeyStore: Trino authenticates only on https", opts.Name)
	}
	if len(opts.Passwords) != 0 {
		return fmt.Errorf("realserver: %s: OAuth2 and Passwords together: the kit starts one authenticator at a time", opts.Name)
	}
	if u, err := url.Parse(o.Issuer); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("realserver: %s: OAuth2.Issuer %q is not an http or https URL", opts.Name, o.Issuer)
	}
	if o.ClientID == "" || o.ClientSecret == "" {
		// The secret itself is never named.
		return fmt.Errorf("realserver: %s: OAuth2 needs a ClientID and a ClientSecret", opts.Name)
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, ", \n") {
			return fmt.Errorf("realserver: %s: OAuth2 scope %q: want one word", opts.Name, s)
		}
	}
	return nil
}

// oauth2Etc adds Options.OAuth2's configuration to config (Trino's
// OAuth2Config and OidcDiscoveryConfig properties).
func oauth2Etc(o *OAuth2, config map[string]string) {
	scopes := o.Scopes
	if len(scopes) == 0 {
		scopes = []string{"openid"}
	}
	principal := o.PrincipalField
	if principal == "" {
		principal = "sub"
	}
	config["http-server.authentication.type"] = "OAUTH2"
	config["http-server.authentication.oauth2.issuer"] = o.Issuer
	config["http-server.authentication.oauth2.oidc.discovery"] = "true"
	config["http-server.authentication.oauth2.client-id"] = o.ClientID
	config["http-server.authentication.oauth2.client-secret"] = o.ClientSecret
	config["http-server.authentication.oauth2.scopes"] = strings.Join(scopes, ",")
	config["http-server.authentication.oauth2.principal-field"] = principal
	// The kit's own statements (the readiness check, Query) keep reaching
	// the http port as a user without credentials; https, where the
	// clients under test go, asks for OAuth2. Without this, Trino with
	// https on answers every request on http 403.
	config["http-server.authentication.allow-insecure-over-http"] = "true"
}
