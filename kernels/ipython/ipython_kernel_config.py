# Installed by `make install` into the venv's etc/ipython/ (IPython reads sys.prefix/etc/ipython),
# so every Python kernel started from this installation -- the default "Python 3" one included,
# not only "Python 3 (Yitong)" -- has the %yt / %%yt magics. Loading only registers the magics;
# the SDK and its HTTP client are imported on the first %yt (yitong_lab.magics is lazy).
c = get_config()  # noqa: F821
c.InteractiveShellApp.extensions.append("yitong_lab")  # merged with any other config's list
