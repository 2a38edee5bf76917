//! The HTTP verb shorthands every client type offers (`get`, `post`, …),
//! each `self.request(Method::X, target)`: written once, so `Client`,
//! `ServiceClient` and the cluster client (whose targets are paths, not
//! URLs) cannot drift apart.

/// Defines `get`, `post`, `put`, `patch`, `delete` and `head` in an `impl`
/// block whose type has `fn request(&self, Method, target) -> builder`:
/// `http_verbs!(url: impl IntoUri => RequestBuilder);`.
macro_rules! http_verbs {
    ($target:ident: $target_ty:ty => $builder:ty) => {
        $crate::client::verbs::http_verbs!(@verbs [get GET, post POST, put PUT, patch PATCH, delete DELETE, head HEAD] $target: $target_ty => $builder);
    };
    (@verbs [$($name:ident $method:ident),*] $target:ident: $target_ty:ty => $builder:ty) => {
        $(
            #[doc = concat!("Starts a ", stringify!($method), " request.")]
            pub fn $name(&self, $target: $target_ty) -> $builder {
                self.request(http::Method::$method, $target)
            }
        )*
    };
}

pub(crate) use http_verbs;
