from .cli import main
from .fastexit import exit_now

exit_now(main())  # the process ends here, without the interpreter's slow finalization (see fastexit)
