"""Process-wide state shared by the router and ``SloHandle``. Ray pickles the router class by
value (its module's globals travel with it), so shared state lives here, a module that is
imported, never copied."""

BY_KEY: dict = {}  # SloHandle key -> the router that routed that request
ROUTERS: list = []  # every SloRequestRouter built in this process (describe(), tests)


def router_for_key(key: str):
    """The router in this process that routed the request with this SloHandle key."""
    return BY_KEY.get(key)
