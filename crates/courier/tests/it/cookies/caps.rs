//! The jar's bounds: 180 cookies per site and 3000 in all (Firefox's
//! figures; Chromium's are 180 and 3300), evicting the expired first and
//! then the least recently used; 4096 bytes of name and value per cookie
//! (RFC 6265bis §5.7 step 1); a `Cookie` header of at most 8190 bytes
//! (curl's bound, under what common servers accept).

use courier::middleware::{CookieJar, CookieLimits};

use super::support::{sent, set};

#[test]
fn a_site_holds_at_most_180_cookies_and_the_header_is_bounded() {
    let jar = CookieJar::new();
    // The figure: 3,800 cookies for a parent domain.
    for i in 0..3800 {
        set(
            &jar,
            &format!("c{i}={}; Domain=example.com", "v".repeat(500)),
            &format!("http://h{}.example.com/", i % 7),
        );
    }
    let header = jar
        .cookies(&"http://www.example.com/".parse().unwrap())
        .unwrap();
    assert!(header.len() <= 8190, "{} bytes", header.len());
    let names = sent(&jar, "http://www.example.com/");
    assert!(!names.is_empty() && names.len() <= 180, "{}", names.len());
    // The newest 180 were kept, and go oldest first: c3620 leads.
    assert!(names[0].starts_with("c3620="), "{}", &names[0][..8]);
    // Each drop is counted: the evicted, and those the header left out.
    let stats = jar.stats();
    assert_eq!((stats.cookies, stats.evicted), (180, 3620));
    assert_eq!(stats.withheld, 2 * (180 - names.len() as u64));
}

#[test]
fn small_cookies_over_the_site_cap_are_evicted_to_180() {
    let jar = CookieJar::new();
    for i in 0..1000 {
        set(&jar, &format!("c{i}=1"), "http://example.com/");
    }
    let names = sent(&jar, "http://example.com/");
    assert_eq!(names.len(), 180);
    assert!(names
        .iter()
        .all(|c| c[1..c.len() - 2].parse::<u32>().unwrap() >= 820));
}

#[test]
fn the_least_recently_used_cookie_is_evicted_first() {
    let jar = CookieJar::new();
    set(&jar, "hot=1; Path=/hot", "http://example.com/");
    for i in 0..179 {
        set(
            &jar,
            &format!("cold{i}=1; Path=/cold"),
            "http://example.com/",
        );
    }
    // Sending `hot` makes it the most recently used.
    assert_eq!(sent(&jar, "http://example.com/hot"), ["hot=1"]);
    set(&jar, "new=1", "http://example.com/");
    assert_eq!(sent(&jar, "http://example.com/hot"), ["hot=1", "new=1"]);
    let cold = sent(&jar, "http://example.com/cold");
    assert_eq!(cold.len(), 179, "{cold:?}");
    assert!(!cold.contains(&"cold0=1".to_string()), "{cold:?}");
}

#[test]
fn the_jar_holds_at_most_3000_cookies() {
    let jar = CookieJar::new();
    for site in 0..20 {
        for i in 0..180 {
            set(
                &jar,
                &format!("c{i}=1"),
                &format!("http://site{site}.example/"),
            );
        }
    }
    let total: usize = (0..20)
        .map(|site| sent(&jar, &format!("http://site{site}.example/")).len())
        .sum();
    assert_eq!(total, 3000);
    // The last site set all of its cookies after the others: it keeps them.
    assert_eq!(sent(&jar, "http://site19.example/").len(), 180);
}

#[test]
fn a_cookie_of_more_than_4096_bytes_is_refused() {
    let jar = CookieJar::new();
    let url = "http://example.com/";
    set(&jar, &format!("a={}; Path=/a", "v".repeat(4095)), url);
    set(&jar, &format!("b={}; Path=/b", "v".repeat(4096)), url);
    set(&jar, &format!("{}=v; Path=/n", "n".repeat(4096)), url);
    assert_eq!(sent(&jar, "http://example.com/a").len(), 1);
    assert!(sent(&jar, "http://example.com/b").is_empty());
    assert!(sent(&jar, "http://example.com/n").is_empty());
}

#[test]
fn the_header_keeps_the_first_cookies_in_order_up_to_its_bound() {
    let jar = CookieJar::new();
    for i in 0..20 {
        set(
            &jar,
            &format!("c{i:02}={}; Path=/", "v".repeat(1000)),
            "http://example.com/",
        );
    }
    set(&jar, "deep=1; Path=/a/b", "http://example.com/");
    let names = sent(&jar, "http://example.com/a/b");
    // The longest path first (RFC 6265bis §5.8.3), then by creation.
    assert_eq!(names[0], "deep=1");
    assert!(names.len() < 10, "{}", names.len());
    for (i, c) in names[1..].iter().enumerate() {
        assert!(c.starts_with(&format!("c{i:02}=")), "{c}");
    }
    let header = jar
        .cookies(&"http://example.com/a/b".parse().unwrap())
        .unwrap();
    assert!(
        header.len() <= 8190 && header.len() > 7000,
        "{}",
        header.len()
    );
}

#[test]
fn the_caps_are_configurable() {
    let jar = CookieJar::with_limits(CookieLimits::default().per_site(3).total(4).max_header(12));
    for i in 0..5 {
        set(&jar, &format!("a{i}=1"), "http://a.example/");
    }
    set(&jar, "b0=1", "http://b.example/");
    set(&jar, "b1=1", "http://b.example/");
    // a2..a4 were kept for a.example; then b's two pushed the total to 5.
    assert_eq!(sent(&jar, "http://b.example/"), ["b0=1", "b1=1"]);
    // 12 bytes: `a3=1; a4=1` fits, a third would not.
    assert_eq!(sent(&jar, "http://a.example/"), ["a3=1", "a4=1"]);
    assert_eq!(jar.stats().cookies, 4);
    assert_eq!(jar.stats().evicted, 3);
}
