"""ms-migrate: migrate MindSpore GradOperation train steps to the functional autodiff API."""

__version__ = "0.1.0"
