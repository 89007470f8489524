//! [`App::build`]: the routes flattened, their chains resolved and completed with the
//! defaults, and the checks that a route has what it needs (responder, body parser) in an
//! order that works.

use std::sync::Arc;

use crate::controller::ControllerDef;
use crate::error::Result;
use crate::error::{BuildError, Component};
use crate::handler::{Middleware, Role, SharedMiddleware};
use crate::service::Service;
use crate::service::{PlannedRoute, Settings};

use super::{App, Group, Kind, MiddlewareRef, Prefix, Special};

impl App {
    /// Checks the configuration and builds the service.
    ///
    /// Routes are sorted by path, method and handler name before they are added, so the result
    /// (and any error) does not depend on link order. Fails on a duplicate method and path
    /// (naming both handlers), a middleware name nobody registered (naming the controller), a
    /// malformed path, or a route whose chain lacks a component it needs (a handler returning
    /// a value with no responder, a controller method taking `Json<T>` or `Form<T>` with no
    /// body parser: only a [bare](App::bare) app can lack them).
    pub fn build(mut self) -> Result<Service, BuildError> {
        let defaults = self.scope.defaults.map(|make| make()).unwrap_or_default();
        let mut groups = Vec::new();
        for group in std::mem::take(&mut self.scope.groups) {
            group.flatten("", &[], &mut groups);
        }
        groups.push(Group {
            scope: Prefix {
                path: String::new(),
                groups: Vec::new(),
            },
            middleware: Vec::new(),
            routes: std::mem::take(&mut self.routes),
        });
        if self.scope.mount_controllers {
            groups.extend(self.controller_groups()?);
        } else if let Some(def) = inventory::iter::<ControllerDef>.into_iter().next() {
            // A bare app that forgot them would answer 404 everywhere without a word.
            tracing::warn!(
                controller = def.name,
                "controllers are linked into the program but not mounted: call \
                 App::mount_controllers() (App::new() does)"
            );
        }
        if let Some(settings) = &self.scope.openapi {
            groups.push(self.openapi_routes(settings)?);
        }
        let mut routes = Vec::new();
        for group in groups {
            for spec in group.routes {
                let mut inner = group.middleware.clone();
                for m in &spec.middleware {
                    inner.push(self.resolve(m, &spec.owner)?);
                }
                let needs = Needs::of(spec.kind);
                let chain = complete(&self.middleware, inner, &defaults, needs);
                routes.push((
                    PlannedRoute {
                        path: route_pattern::join(&group.scope.path, &spec.path),
                        method: spec.method,
                        handler: spec.handler,
                        chain,
                        endpoint: spec.endpoint,
                    },
                    needs,
                ));
            }
        }
        // Checked in the order of the route table, so the error does not depend on link order.
        routes.sort_by(|(a, _), (b, _)| {
            (&a.path, a.method.as_str(), &a.handler).cmp(&(&b.path, b.method.as_str(), &b.handler))
        });
        for (route, needs) in &routes {
            let what = || format!("{} {} ({})", route.method, route.path, route.handler);
            needs.check(&route.chain, what)?;
            check_order(&route.chain, what)?;
        }
        let routes = routes.into_iter().map(|(route, _)| route).collect();
        // 404 and 405 answers: the app's middleware and the default error handler.
        let global = complete(&self.middleware, Vec::new(), &defaults, Needs::default());
        let special = |special: Option<Special>, what: &str| {
            special
                .map(|special| {
                    let needs = Needs::of(special.kind);
                    let chain = complete(&self.middleware, Vec::new(), &defaults, needs);
                    needs.check(&chain, || format!("{what} ({})", special.handler))?;
                    Ok((chain, special.endpoint))
                })
                .transpose()
        };
        let fallback = special(self.scope.fallback.take(), "the fallback")?;
        let not_allowed = special(
            self.scope.not_allowed.take(),
            "the method-not-allowed handler",
        )?;
        Service::compile(
            routes,
            Settings {
                global,
                fallback,
                not_allowed,
                trailing_slash: self.scope.trailing_slash,
                catcher: defaults
                    .iter()
                    .find(|m| m.role() == Some(Role::Recover))
                    .cloned(),
                trusted_proxies: self.scope.trusted_proxies,
                state: self.scope.state,
                limits: self.scope.limits,
                #[cfg(feature = "tls")]
                tls: self.scope.tls,
            },
        )
    }

    /// The middleware a route names, registered under that name; `owner` (a controller) is
    /// named in the error.
    pub(super) fn resolve(
        &self,
        m: &MiddlewareRef,
        owner: &str,
    ) -> Result<SharedMiddleware, BuildError> {
        match m {
            MiddlewareRef::Shared(m) => Ok(Arc::clone(m)),
            MiddlewareRef::Named(name) => {
                self.scope
                    .named
                    .get(name)
                    .cloned()
                    .ok_or_else(|| BuildError::UnknownMiddleware {
                        owner: owner.to_owned(),
                        name: (*name).to_owned(),
                    })
            }
        }
    }
}

/// What a route needs of its chain besides the error handler: a responder for what a handler
/// answers (`value`: it returns one for sure), a body parser for the `Json<T>` or `Form<T>` it
/// takes.
#[derive(Clone, Copy, Default)]
pub(super) struct Needs {
    /// A handler or a controller method (not an endpoint): it may leave a value, returned or
    /// set through the context (`ctx.created(value)`).
    handler: bool,
    value: bool,
    body: bool,
    /// How many of a controller method's arguments read the body.
    bodies: u8,
}

impl Needs {
    pub(super) fn of(kind: Kind) -> Self {
        match kind {
            Kind::Handler { value } => Self {
                handler: true,
                value,
                body: false,
                bodies: 0,
            },
            Kind::Controller(describe) => {
                let (body, value, bodies) = crate::openapi::route_needs(describe);
                Self {
                    handler: true,
                    value,
                    body,
                    bodies,
                }
            }
            Kind::Endpoint => Self::default(),
        }
    }

    /// Whether a default of `role` goes on the route.
    pub(super) fn wants(self, role: Role) -> bool {
        match role {
            Role::Recover | Role::ErrorHandler => true,
            Role::Responder => self.handler,
            Role::BodyParser => self.body,
            _ => false,
        }
    }

    /// Refuses a route whose chain lacks what it needs (only a bare app's can).
    /// `what` names the route (method, path and handler) in the error.
    pub(super) fn check(
        self,
        chain: &[SharedMiddleware],
        what: impl FnOnce() -> String,
    ) -> Result<(), BuildError> {
        let has = |roles: &[Role]| {
            chain
                .iter()
                .any(|m| m.role().is_some_and(|r| roles.contains(&r)))
        };
        if self.bodies > 1 {
            return Err(BuildError::BodyReadTwice { route: what() });
        }
        if self.value && !has(&[Role::Responder, Role::Renderer]) {
            return Err(BuildError::MissingComponent {
                route: what(),
                component: Component::Responder,
            });
        }
        if self.body && !has(&[Role::BodyParser]) {
            return Err(BuildError::MissingComponent {
                route: what(),
                component: Component::BodyParser,
            });
        }
        Ok(())
    }
}

/// Refuses a chain whose CSRF check runs inside its session: every forged request would cost
/// a session load (a store round trip) before its 403. `what` names the route.
fn check_order(chain: &[SharedMiddleware], what: impl Fn() -> String) -> Result<(), BuildError> {
    let at = |role| chain.iter().position(|m| m.role() == Some(role));
    if let (Some(session), Some(csrf)) = (at(Role::Session), at(Role::Csrf))
        && session < csrf
    {
        return Err(BuildError::CsrfInsideSession { route: what() });
    }
    Ok(())
}

/// A route's chain: the app's middleware `outer` with each of `defaults` the route `needs`
/// and does not have already (anywhere in its chain), then `inner` (its group's and its own).
/// A default goes before the first middleware of `outer` whose [`Role`] comes later in the
/// reference order, else after all of `outer`: inside what the app mounted, so a logger sees
/// the error handler's answer and compress the responder's bytes. The default recover goes
/// first, outside everything: a panic anywhere in the chain is answered, and the compiled
/// route runs it as its catcher (`Route::new`).
pub(super) fn complete(
    outer: &[SharedMiddleware],
    inner: Vec<SharedMiddleware>,
    defaults: &[SharedMiddleware],
    needs: Needs,
) -> Vec<SharedMiddleware> {
    let mut chain = outer.to_vec();
    for default in defaults {
        let Some(role) = default.role() else { continue };
        let has = |m: &SharedMiddleware| m.role() == Some(role);
        if !needs.wants(role) || chain.iter().any(has) || inner.iter().any(has) {
            continue;
        }
        let at = if role == Role::Recover {
            0
        } else {
            chain
                .iter()
                .position(|m| m.role().is_some_and(|r| r > role))
                .unwrap_or(chain.len())
        };
        chain.insert(at, Arc::clone(default));
    }
    chain.extend(inner);
    chain
}
