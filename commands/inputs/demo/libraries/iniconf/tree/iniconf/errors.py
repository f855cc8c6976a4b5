"""What iniconf raises."""


class ConfigError(Exception):
    """Base class of iniconf's errors."""


class ParseError(ConfigError):
    """The text is not valid INI."""


class InterpolationError(ConfigError):
    """A ${...} reference cannot be resolved."""
