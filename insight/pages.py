def bad_filters(*a):
    raise NotImplementedError


def dashboard_page(*a):
    raise NotImplementedError
