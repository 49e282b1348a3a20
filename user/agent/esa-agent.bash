# bash completion for esa-agent(8)
_esa_agent()
{
	local cur prev words cword
	_init_completion || return
	case $prev in
	-c|--config|--new-key) _filedir; return ;;
	--metrics|-i|--stats-interval) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W '--config --check --new-key --metrics --stats-interval
			--json --quiet --verbose --version --help' -- "$cur"))
	fi
}
complete -F _esa_agent esa-agent
